#include "comm/frame.h"

#include <cstring>

namespace afd::comm {

namespace {

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

// Header layout (offsets): magic 0, version 4, kind 6, layer 8, stage 12, step 16,
// byteLength 24, payloadChecksum 32, headerChecksum 40 (u32), holdUs 44 (u32),
// sentAtNs 48, clockDomain 56, echoUs 64 (u32), echoLayer 68 (u32), echoStage 72 (u32),
// reserved 76 (u32, zero).
constexpr size_t kHeaderChecksumOffset = 40;
constexpr size_t kHoldOffset = 44;

// The header checksum covers every other byte: 0..40 and 44..80.
uint32_t headerChecksum(const uint8_t* header) {
  uint8_t covered[kFrameHeaderBytes - 4];
  std::memcpy(covered, header, kHeaderChecksumOffset);
  std::memcpy(covered + kHeaderChecksumOffset, header + kHoldOffset, kFrameHeaderBytes - kHoldOffset);
  return static_cast<uint32_t>(mix(payloadChecksum(covered, sizeof covered)));
}

}  // namespace

const char* frameKindName(FrameKind kind) {
  switch (kind) {
    case FrameKind::kHello: return "hello";
    case FrameKind::kHelloAck: return "hello-ack";
    case FrameKind::kReject: return "reject";
    case FrameKind::kStepRequest: return "step-request";
    case FrameKind::kStepCall: return "step-call";
    case FrameKind::kStepGo: return "step-go";
    case FrameKind::kHidden: return "hidden";
    case FrameKind::kRouterLogits: return "router-logits";
    case FrameKind::kFfnOutput: return "ffn-output";
    case FrameKind::kGoodbye: return "goodbye";
    case FrameKind::kBootstrap: return "bootstrap";
    case FrameKind::kBootstrapReply: return "bootstrap-reply";
    case FrameKind::kEpHello: return "ep-hello";
    case FrameKind::kEpStep: return "ep-step";
    case FrameKind::kEpDispatch: return "ep-dispatch";
    case FrameKind::kEpCombine: return "ep-combine";
    case FrameKind::kEpBootstrap: return "ep-bootstrap";
  }
  return "unknown";
}

bool isTransferFrame(FrameKind kind) {
  return kind == FrameKind::kHidden || kind == FrameKind::kRouterLogits || kind == FrameKind::kFfnOutput;
}

uint64_t payloadChecksum(const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t h0 = 0x243F6A8885A308D3ull ^ bytes, h1 = 0x13198A2E03707344ull;
  size_t i = 0;
  // Two independent lanes so the multiply latency overlaps.
  for (; i + 16 <= bytes; i += 16) {
    uint64_t a, b;
    std::memcpy(&a, p + i, 8);
    std::memcpy(&b, p + i + 8, 8);
    h0 = (h0 ^ a) * kMul;
    h1 = (h1 ^ b) * kMul;
    h0 = (h0 << 29) | (h0 >> 35);
    h1 = (h1 << 31) | (h1 >> 33);
  }
  if (i + 8 <= bytes) {
    uint64_t a;
    std::memcpy(&a, p + i, 8);
    h1 = (h1 ^ a) * kMul;
    i += 8;
  }
  uint64_t tail = 0;  // fewer than 8 bytes left
  std::memcpy(&tail, p + i, bytes - i);
  h0 = (h0 ^ tail) * kMul;
  return mix(h0 ^ mix(h1));
}

void encodeFrameHeader(const FrameHeader& h, uint8_t* out) {
  put32(out + 0, h.magic);
  put16(out + 4, h.version);
  put16(out + 6, static_cast<uint16_t>(h.kind));
  put32(out + 8, h.layer);
  put32(out + 12, h.stage);
  put64(out + 16, h.step);
  put64(out + 24, h.byteLength);
  put64(out + 32, h.payloadChecksum);
  put32(out + kHoldOffset, h.holdUs);
  put64(out + 48, h.sentAtNs);
  put64(out + 56, h.clockDomain);
  put32(out + 64, h.echoUs);
  put32(out + 68, h.echoLayer);
  put32(out + 72, h.echoStage);
  put32(out + 76, 0);
  put32(out + kHeaderChecksumOffset, headerChecksum(out));
}

std::string decodeFrameHeader(const uint8_t* in, FrameHeader* h) {
  h->magic = get32(in + 0);
  if (h->magic != kFrameMagic) return "bad magic (the peer is not an AFD connector or the stream is out of sync)";
  h->version = get16(in + 4);
  if (h->version != kWireVersion) {
    return "wire version " + std::to_string(h->version) + " but this build speaks " + std::to_string(kWireVersion) +
           " (run the same AFD version on every rank)";
  }
  if (get32(in + kHeaderChecksumOffset) != headerChecksum(in)) return "header checksum mismatch (corrupt stream)";
  h->kind = static_cast<FrameKind>(get16(in + 6));
  h->layer = get32(in + 8);
  h->stage = get32(in + 12);
  h->step = get64(in + 16);
  h->byteLength = get64(in + 24);
  h->payloadChecksum = get64(in + 32);
  h->holdUs = get32(in + kHoldOffset);
  h->sentAtNs = get64(in + 48);
  h->clockDomain = get64(in + 56);
  h->echoUs = get32(in + 64);
  h->echoLayer = get32(in + 68);
  h->echoStage = get32(in + 72);
  if (h->byteLength > kMaxFramePayloadBytes) return "payload length " + std::to_string(h->byteLength) + " is too large";
  uint16_t k = static_cast<uint16_t>(h->kind);
  if (k < 1 || k > static_cast<uint16_t>(kLastFrameKind)) return "unknown frame kind " + std::to_string(k);
  return {};
}

}  // namespace afd::comm
