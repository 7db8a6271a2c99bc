#include "comm/tcp-handshake.h"

#include <algorithm>

namespace afd::comm {

// Layout (little-endian u32 words): numAttention, numFfn, attentionRank, numLayers,
// hiddenSize, numExperts, gateOnAttention (0/1), activationBytes, then numLayers bytes of
// moeLayers (0/1), then u32 idBytes and idBytes of the rendezvous id (UTF-8).
namespace {
constexpr size_t kWords = 8;

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24); }
std::string str(uint32_t v) { return std::to_string(v); }
}  // namespace

std::vector<uint8_t> encodeHello(const HelloPayload& h) {
  const size_t idAt = kWords * 4 + h.model.numLayers;
  std::vector<uint8_t> out(idAt + 4 + h.rendezvousId.size());
  uint32_t words[kWords] = {static_cast<uint32_t>(h.topology.numAttention), static_cast<uint32_t>(h.topology.numFfn),
                            static_cast<uint32_t>(h.attentionRank),       h.model.numLayers,
                            h.model.hiddenSize,                           h.model.numExperts,
                            h.model.gateOnAttention ? 1u : 0u,        h.model.activationBytes};
  for (size_t i = 0; i < kWords; ++i) put32(out.data() + 4 * i, words[i]);
  for (uint32_t l = 0; l < h.model.numLayers; ++l) {
    out[kWords * 4 + l] = l < h.model.moeLayers.size() && h.model.moeLayers[l] ? 1 : 0;
  }
  put32(out.data() + idAt, static_cast<uint32_t>(h.rendezvousId.size()));
  std::copy(h.rendezvousId.begin(), h.rendezvousId.end(), out.begin() + idAt + 4);
  return out;
}

std::string decodeHello(const uint8_t* d, size_t bytes, HelloPayload* out) {
  if (bytes < kWords * 4) return "hello of " + std::to_string(bytes) + " bytes is too short";
  out->topology.numAttention = static_cast<int>(get32(d));
  out->topology.numFfn = static_cast<int>(get32(d + 4));
  out->attentionRank = static_cast<int>(get32(d + 8));
  out->model.numLayers = get32(d + 12);
  out->model.hiddenSize = get32(d + 16);
  out->model.numExperts = get32(d + 20);
  out->model.gateOnAttention = get32(d + 24) != 0;
  out->model.activationBytes = get32(d + 28);
  const size_t idAt = kWords * 4 + static_cast<size_t>(out->model.numLayers);
  if (bytes < idAt + 4) return "hello size does not match its layer count";
  const size_t idBytes = get32(d + idAt);
  if (idBytes > kMaxRendezvousIdBytes || bytes != idAt + 4 + idBytes) return "hello size does not match its rendezvous id";
  out->model.moeLayers.assign(out->model.numLayers, false);
  for (uint32_t l = 0; l < out->model.numLayers; ++l) out->model.moeLayers[l] = d[kWords * 4 + l] != 0;
  out->rendezvousId.assign(reinterpret_cast<const char*>(d + idAt + 4), idBytes);
  return {};
}

HandshakeFrame readHandshakeFrame(Socket& socket, FrameKind kind, size_t maxBytes, Deadline deadline, StopFlag stop,
                                  const std::string& who, const std::string& self, std::vector<uint8_t>* payload) {
  const char* what = frameKindName(kind);
  uint8_t headerBytes[kFrameHeaderBytes];
  // The prefix first: a peer of another version may send a header of another size.
  socket.recvAll(headerBytes, kFramePrefixBytes, deadline, stop, who, what);
  FrameHeader h;
  h.magic = static_cast<uint32_t>(headerBytes[0]) | (static_cast<uint32_t>(headerBytes[1]) << 8) |
            (static_cast<uint32_t>(headerBytes[2]) << 16) | (static_cast<uint32_t>(headerBytes[3]) << 24);
  h.version = static_cast<uint16_t>(headerBytes[4] | (headerBytes[5] << 8));
  HandshakeFrame out;
  if (h.magic != kFrameMagic) return out;
  if (h.version != kWireVersion) {
    out.refusal = self + " speaks AFD wire version " + std::to_string(kWireVersion) + " but the peer sent version " +
                  std::to_string(h.version) + "; run the same AFD build on every rank";
    return out;
  }
  socket.recvAll(headerBytes + kFramePrefixBytes, kFrameHeaderBytes - kFramePrefixBytes, deadline, stop, who, what);
  const std::string problem = decodeFrameHeader(headerBytes, &h);
  if (!problem.empty() || h.kind != kind || h.byteLength > maxBytes) return out;
  payload->resize(h.byteLength);
  socket.recvAll(payload->data(), payload->size(), deadline, stop, who, what);
  out.ok = payloadChecksum(payload->data(), payload->size()) == h.payloadChecksum;
  return out;
}

std::string checkHello(const HelloPayload& got, const AfdTopology& topo, int ffnRank, const ModelShape& m,
                       const std::string& rendezvousId) {
  if (got.rendezvousId != rendezvousId) {
    // Checked first: a peer of another start must not learn anything or join, whatever it runs.
    auto show = [](const std::string& id) { return id.empty() ? std::string("none") : "\"" + id + "\""; };
    return "attention rank " + std::to_string(got.attentionRank) + " belongs to another start of the topology " +
           "(rendezvous id " + show(got.rendezvousId) + ", this FFN rank's is " + show(rendezvousId) +
           "); a rank of an earlier launch or restart, or of another launch on the same ports, is still " +
           "connecting: stop it, or give every rank of one start the same --rendezvous-id";
  }
  if (got.topology.numAttention != topo.numAttention || got.topology.numFfn != topo.numFfn) {
    return "attention rank " + std::to_string(got.attentionRank) + " runs topology " + got.topology.name() +
           " but this FFN rank runs " + topo.name() + "; start every rank with the same --topology";
  }
  AttentionBlock block = topo.blockOf(ffnRank);
  if (got.attentionRank < block.start || got.attentionRank >= block.start + block.size) {
    return "attention rank " + std::to_string(got.attentionRank) + " does not belong to FFN rank " +
           std::to_string(ffnRank) + " in " + topo.name() + " (it serves attention ranks " +
           std::to_string(block.start) + ".." + std::to_string(block.start + block.size - 1) +
           "); check --rank and the FFN host/port list";
  }
  const ModelShape& g = got.model;
  if (g.numLayers != m.numLayers || g.hiddenSize != m.hiddenSize || g.numExperts != m.numExperts ||
      g.moeLayers != m.moeLayers) {
    return "model mismatch: attention rank " + std::to_string(got.attentionRank) + " has " + str(g.numLayers) +
           " layers, hidden " + str(g.hiddenSize) + ", " + str(g.numExperts) + " experts; this FFN rank has " +
           str(m.numLayers) + " layers, hidden " + str(m.hiddenSize) + ", " + str(m.numExperts) +
           " experts; load the same --model on every rank";
  }
  if (g.activationBytes != m.activationBytes) {
    auto dt = [](uint32_t b) { return b == 2 ? std::string("bf16 (cuda backend)") : b == 4 ? std::string("f32 (cpu backend)") : str(b) + "-byte"; };
    return "activation dtype differs: attention rank " + std::to_string(got.attentionRank) + " sends " +
           dt(g.activationBytes) + " hidden states but this FFN rank computes on " + dt(m.activationBytes) +
           "; run both roles of a block on the same kind of backend";
  }
  if (g.gateOnAttention != m.gateOnAttention) {
    return std::string("gate placement differs: attention rank ") + std::to_string(got.attentionRank) +
           (g.gateOnAttention ? " computes the router (computeGateOnAttention=true)"
                              : " expects the router on FFN (computeGateOnAttention=false)") +
           " but this FFN rank does not agree; use the same computeGateOnAttention on every rank";
  }
  return {};
}

}  // namespace afd::comm
