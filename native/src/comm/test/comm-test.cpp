// Unit tests of the connector over loopback TCP: framing, control payload, rendezvous,
// the control-plane hub (idle peers called into steps), the data plane in DBO order,
// deadlines, lost peers, rejections and shutdown. Build/run: native/src/comm/comm.test.ts.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "comm/control-payload.h"
#include "comm/frame.h"
#include "comm/rendezvous.h"
#include "comm/test/harness.h"
#include "comm/test/old-build-peer.h"
#include "comm/test/ports.h"
#include "comm/topology.h"

using namespace afd::comm;

namespace {

constexpr uint32_t kLayers = 3;
constexpr uint32_t kHidden = 8;

ModelShape shape() {
  ModelShape m;
  m.numLayers = kLayers;
  m.hiddenSize = kHidden;
  m.numExperts = 4;
  m.moeLayers = {false, true, true};
  return m;
}

RendezvousConfig config(AfdTopology topo, int rank, int basePort) {
  RendezvousConfig c;
  c.topology = topo;
  c.rank = rank;
  c.ffnHosts.assign(c.topology.numFfn, "127.0.0.1");
  c.basePort = basePort;
  c.stepDeadlineMs = 2000;
  c.rendezvousTimeoutMs = 5000;
  c.model = shape();
  return c;
}

// Fake FFN compute: out = 2 * x + layer.
void fakeFfn(const float* x, float* out, size_t n, uint32_t layer) {
  for (size_t i = 0; i < n; ++i) out[i] = 2 * x[i] + static_cast<float>(layer);
}

// The FFN side's rendezvous in a thread, for tests whose peers are refused or that stop
// it: the CommError that ends it is expected.
std::thread acceptInBackground(FfnRendezvous& ffn, std::atomic<bool>& stop) {
  return std::thread([&ffn, &stop] {
    try {
      ffn.acceptPeers(&stop);
    } catch (const CommError&) {
    }
  });
}

// FFN rank loop over the real connector with the fake compute; returns the shutdown reason.
// rendezvous = false: the block has already joined (acceptPeers ran).
std::string serveFfn(FfnRendezvous& ffn, std::atomic<bool>& stop, std::atomic<int>* steps, bool rendezvous = true) {
  if (rendezvous) ffn.acceptPeers(&stop);
  ControlPayload payload;
  std::vector<float> in, out;
  std::string by;
  while (ffn.recvStep(&payload, &stop, &by)) {
    for (uint32_t layer = 0; layer < kLayers; ++layer) {
      for (int stage = 0; stage < payload.numStages; ++stage) {
        size_t rows = 0;
        for (int p = 0; p < payload.numPeers; ++p) rows += payload.wireRows(p, stage);
        in.resize(rows * kHidden);
        out.resize(rows * kHidden);
        size_t offset = 0;
        for (int p = 0; p < payload.numPeers; ++p) {
          size_t n = payload.wireRows(p, stage) * kHidden;
          ffn.recv(p, in.data() + offset, n * 4, {TransferKind::kHidden, layer, uint32_t(stage), payload.step}, {});
          offset += n;
        }
        fakeFfn(in.data(), out.data(), in.size(), layer);
        offset = 0;
        for (int p = 0; p < payload.numPeers; ++p) {
          size_t n = payload.wireRows(p, stage) * kHidden;
          ffn.send(p, out.data() + offset, n * 4, {TransferKind::kFfnOutput, layer, uint32_t(stage), payload.step}, {});
          offset += n;
        }
        ffn.synchronize({});
      }
    }
    if (steps) steps->fetch_add(1);
  }
  return by;
}

// One attention step in DBO order: both stages are sent before stage 0 is received.
// Checks each returned row against the fake compute. tokens[s] = 0 sends a placeholder.
void attentionStep(AttentionRendezvous& a, std::vector<uint32_t> tokens, float seed) {
  ControlPayload merged;
  a.beginStep(tokens.data(), static_cast<int>(tokens.size()), 0, &merged);
  int stages = merged.numStages;
  tokens.resize(stages, 0);
  std::vector<std::vector<float>> x(stages), y(stages);
  for (int s = 0; s < stages; ++s) {
    size_t rows = tokens[s] ? tokens[s] : 1;
    x[s].resize(rows * kHidden);
    y[s].resize(rows * kHidden);
  }
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    for (int s = 0; s < stages; ++s) {
      for (size_t i = 0; i < x[s].size(); ++i) x[s][i] = seed + s * 100 + layer * 10 + i;
      a.send(0, x[s].data(), x[s].size() * 4, {TransferKind::kHidden, layer, uint32_t(s), merged.step}, {});
    }
    for (int s = 0; s < stages; ++s) {
      a.recv(0, y[s].data(), y[s].size() * 4, {TransferKind::kFfnOutput, layer, uint32_t(s), merged.step}, {});
      for (size_t i = 0; i < y[s].size(); ++i) {
        CHECK_MSG(y[s][i] == 2 * x[s][i] + layer, "row mismatch at layer " << layer << " stage " << s);
      }
    }
    a.synchronize({});
  }
}

// Idle attention rank: answers step calls with empty steps until stop.
void idleLoop(AttentionRendezvous& a, std::atomic<bool>& stop, std::atomic<int>& emptySteps) {
  while (!stop.load()) {
    if (!a.pollStepCall(20)) continue;
    attentionStep(a, {0}, 0);
    emptySteps.fetch_add(1);
  }
}

}  // namespace

TEST(topology_blocks_match_mapping_ts) {
  AfdTopology t = AfdTopology::of(3, 2);
  CHECK(t.blockOf(0).start == 0 && t.blockOf(0).size == 2);
  CHECK(t.blockOf(1).start == 2 && t.blockOf(1).size == 1);
  CHECK(t.ffnRankOf(1) == 0 && t.ffnRankOf(2) == 1 && t.peerIndexOf(1) == 1 && t.peerIndexOf(2) == 0);
  AfdTopology u = AfdTopology::of(7, 3);  // blocks 3,2,2
  CHECK(u.blockOf(1).start == 3 && u.blockOf(2).start == 5 && u.ffnRankOf(4) == 1 && u.ffnRankOf(6) == 2);
  for (auto [x, y] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {2, 2}, {3, 2}, {4, 2}, {4, 4}, {9, 4}}) {
    AfdTopology v = AfdTopology::of(x, y);
    for (int a = 0; a < v.numAttention; ++a) {
      AttentionBlock b = v.blockOf(v.ffnRankOf(a));
      CHECK(a >= b.start && a < b.start + b.size);
    }
  }
  CHECK_THROWS(AfdTopology::of(1, 2), CommErrorKind::kConfig, "x >= y");
  CHECK_THROWS(AfdTopology::of(0, 1), CommErrorKind::kConfig, "rank counts must be positive");
  CHECK(AfdTopology::of(3, 2).name() == "3A2F");
}

TEST(frame_header_roundtrip_and_corruption) {
  FrameHeader h;
  h.kind = FrameKind::kHidden;
  h.layer = 47;
  h.stage = 1;
  h.step = 123456789012ull;
  h.byteLength = 4096;
  h.payloadChecksum = 0xdeadbeefcafef00dull;
  uint8_t bytes[kFrameHeaderBytes];
  encodeFrameHeader(h, bytes);
  FrameHeader back;
  CHECK(decodeFrameHeader(bytes, &back).empty());
  CHECK(back.kind == h.kind && back.layer == 47 && back.stage == 1 && back.step == h.step && back.byteLength == 4096);
  bytes[9] ^= 1;  // flip a bit of the layer
  CHECK(decodeFrameHeader(bytes, &back).find("checksum") != std::string::npos);
  bytes[0] = 'G';  // "GET /" from an HTTP client
  CHECK(decodeFrameHeader(bytes, &back).find("magic") != std::string::npos);
  std::vector<uint8_t> data(1000, 7);
  uint64_t sum = payloadChecksum(data.data(), data.size());
  data[999] = 8;
  CHECK(payloadChecksum(data.data(), data.size()) != sum);
}

TEST(control_payload_roundtrip) {
  ControlPayload p;
  p.reset(3);
  p.step = 99;
  p.flags = kFlagWarmup | kFlagShutdown;
  p.numStages = 2;
  p.setTokens(0, 0, 5);
  p.setTokens(0, 1, 4);
  p.setTokens(2, 1, 7);
  std::vector<uint8_t> bytes;
  encodeControlPayload(p, &bytes);
  CHECK(bytes.size() == controlPayloadBytes(3, 2));
  ControlPayload q;
  CHECK(decodeControlPayload(bytes.data(), bytes.size(), &q).empty());
  CHECK(q.step == 99 && q.flags == p.flags && q.numStages == 2 && q.numPeers == 3);
  CHECK(q.tokens(0, 0) == 5 && q.tokens(0, 1) == 4 && q.tokens(1, 0) == 0 && q.wireRows(1, 0) == 1);
  CHECK(q.tokens(2, 1) == 7);
  CHECK(!decodeControlPayload(bytes.data(), bytes.size() - 1, &q).empty());
}

// The bytes shared/src/protocol/controlPayload.ts encodes for stepId 12345, flags
// warmup + shutdown, counts [[5, 0, 7], [4, 0, 0]] (stage-major), passed in hex by
// comm.test.ts: both sides must read and write the identical layout.
TEST(control_payload_matches_the_typescript_encoder) {
  const char* hex = std::getenv("AFD_CONTROL_PAYLOAD_HEX");
  CHECK_MSG(hex != nullptr, "AFD_CONTROL_PAYLOAD_HEX is not set (run through comm.test.ts)");
  std::vector<uint8_t> ts;
  for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) ts.push_back(static_cast<uint8_t>(std::stoi(std::string(hex + i, 2), nullptr, 16)));
  ControlPayload p;
  std::string problem = decodeControlPayload(ts.data(), ts.size(), &p);
  CHECK_MSG(problem.empty(), problem);
  CHECK(p.step == 12345 && p.flags == (kFlagWarmup | kFlagShutdown) && p.numStages == 2 && p.numPeers == 3);
  CHECK(p.tokens(0, 0) == 5 && p.tokens(1, 0) == 0 && p.tokens(2, 0) == 7 && p.tokens(0, 1) == 4 && p.tokens(2, 1) == 0);
  std::vector<uint8_t> mine;
  encodeControlPayload(p, &mine);
  CHECK(mine == ts);
}

TEST(loopback_1a1f_dbo_steps) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  std::atomic<bool> stop{false};
  std::atomic<int> steps{0};
  std::string by;
  std::thread server([&] { by = serveFfn(ffn, stop, &steps); });
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  a.connect(nullptr);
  attentionStep(a, {3}, 1);
  attentionStep(a, {5, 4}, 2);  // two stages, DBO order
  attentionStep(a, {1}, 3);
  a.shutdown("test done");
  server.join();
  CHECK(steps.load() == 3);
  CHECK_MSG(by.find("attention rank 0") != std::string::npos, "shutdown by: " << by);
}

TEST(loopback_3a2f_idle_peers_are_called_into_steps) {
  int port = afdtest::freeBasePort(2);
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<FfnRendezvous>> ffns;
  std::vector<std::thread> servers;
  std::atomic<int> steps0{0}, steps1{0};
  for (int f = 0; f < 2; ++f) ffns.push_back(std::make_unique<FfnRendezvous>(config(AfdTopology::of(3, 2), f, port)));
  servers.emplace_back([&] { serveFfn(*ffns[0], stop, &steps0); });
  servers.emplace_back([&] { serveFfn(*ffns[1], stop, &steps1); });
  std::vector<std::unique_ptr<AttentionRendezvous>> as;
  std::vector<std::thread> connecting;
  for (int a = 0; a < 3; ++a) as.push_back(std::make_unique<AttentionRendezvous>(config(AfdTopology::of(3, 2), a, port)));
  for (int a = 2; a >= 0; --a) connecting.emplace_back([&, a] { as[a]->connect(nullptr); });
  for (auto& t : connecting) t.join();
  std::atomic<bool> idleStop{false};
  std::atomic<int> empty1{0};
  std::thread idle([&] { idleLoop(*as[1], idleStop, empty1); });
  attentionStep(*as[0], {4}, 1);      // A1 is idle: called in, sends a placeholder row
  attentionStep(*as[0], {40, 33}, 2);  // DBO: the idle peer joins both stages
  attentionStep(*as[2], {2, 2}, 3);    // block of F1 is independent of F0's
  idleStop.store(true);
  idle.join();
  CHECK(empty1.load() == 2);
  for (auto& a : as) a->shutdown("done");
  for (auto& t : servers) t.join();
  CHECK(steps0.load() == 2 && steps1.load() == 1);
}

TEST(start_order_ffn_after_attention) {
  int port = afdtest::freeBasePort(1);
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  std::thread client([&] { a.connect(nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // attention retries meanwhile
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  std::atomic<bool> stop{false};
  std::thread server([&] { serveFfn(ffn, stop, nullptr); });
  client.join();
  attentionStep(a, {2}, 0);
  a.shutdown("done");
  server.join();
}

TEST(bootstrap_blob_travels_after_the_handshake_and_steps_follow) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  std::vector<uint8_t> got;
  std::thread client([&] {
    auto link = a.dial(nullptr, 5000);
    got = AttentionRendezvous::recvBootstrap(*link, 2000);
    a.adopt(std::move(link));
  });
  ffn.acceptPeers(nullptr);
  std::vector<uint8_t> blob(128);
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>(i * 7);
  ffn.sendBootstrap(0, blob);
  client.join();
  CHECK(got == blob);
  CHECK_THROWS(ffn.sendBootstrap(1, blob), CommErrorKind::kConfig, "peer 1");
  std::atomic<bool> stop{false};
  std::string serverError;
  std::thread server([&] {
    try {
      serveFfn(ffn, stop, nullptr, false);
    } catch (const std::exception& e) {
      serverError = e.what();
    }
  });
  std::string error;
  try {
    attentionStep(a, {2}, 0);
    a.shutdown("done");
  } catch (const std::exception& e) {
    error = e.what();
    stop.store(true);
    a.close();
  }
  server.join();
  CHECK_MSG(error.empty() && serverError.empty(), "attention: " << error << "; ffn: " << serverError);
}

// A handshaken 1A1F link, not adopted: the attention side's raw link to `ffn`.
static std::unique_ptr<TcpLink> dialAndAccept(FfnRendezvous& ffn, AttentionRendezvous& a) {
  std::unique_ptr<TcpLink> link;
  std::thread client([&] { link = a.dial(nullptr, 5000); });
  ffn.acceptPeers(nullptr);
  client.join();
  return link;
}

TEST(bootstrap_missing_is_a_protocol_error_naming_the_connector) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  std::unique_ptr<TcpLink> link = dialAndAccept(ffn, a);
  ffn.closePeers("FFN rank 0 speaks tcp");  // a goodbye instead of the bootstrap
  CHECK_THROWS(AttentionRendezvous::recvBootstrap(*link, 2000), CommErrorKind::kShutdown, "speaks tcp");
}

TEST(tcp_attention_rank_of_a_device_connector_ffn_names_the_connector) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  a.adopt(dialAndAccept(ffn, a));  // connector tcp: no bootstrap is read
  ffn.sendBootstrap(0, std::vector<uint8_t>(128, 7));
  const uint32_t tokens[1] = {2};
  ControlPayload merged;
  CHECK_THROWS(a.beginStep(tokens, 1, 0, &merged), CommErrorKind::kConfig, "same --connector");
}

TEST(bootstrap_reply_travels_back_to_the_ffn_rank) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  std::vector<uint8_t> reply(200);
  for (size_t i = 0; i < reply.size(); ++i) reply[i] = static_cast<uint8_t>(i * 13 + 1);
  std::vector<uint8_t> got;
  std::thread client([&] {
    auto link = a.dial(nullptr, 5000);
    got = AttentionRendezvous::recvBootstrap(*link, 2000);
    AttentionRendezvous::sendBootstrapReply(*link, reply, 2000);
    a.adopt(std::move(link));
  });
  ffn.acceptPeers(nullptr);
  const std::vector<uint8_t> blob(64, 0x42);
  ffn.sendBootstrap(0, blob);
  CHECK(ffn.recvBootstrapReply(0, 2000) == reply);
  client.join();
  CHECK(got == blob);
  CHECK_THROWS(ffn.recvBootstrapReply(1, 100), CommErrorKind::kConfig, "peer 1");
  a.shutdown("done");
}

TEST(bootstrap_reply_of_the_wrong_kind_or_size_is_a_protocol_error) {
  for (const bool tooLarge : {false, true}) {
    int port = afdtest::freeBasePort(1);
    FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
    AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
    std::unique_ptr<TcpLink> link = dialAndAccept(ffn, a);
    if (tooLarge) {
      const std::vector<uint8_t> big(70000, 1);
      CHECK_THROWS(AttentionRendezvous::sendBootstrapReply(*link, big, 2000), CommErrorKind::kConfig, "65536-byte limit");
      FrameHeader h;  // a peer that does not check its own size: the receiver refuses it
      h.kind = FrameKind::kBootstrapReply;
      h.byteLength = big.size();
      link->send(h, big.data(), Deadline::afterMs(2000));
      CHECK_THROWS(ffn.recvBootstrapReply(0, 2000), CommErrorKind::kProtocol, "70000 bytes");
    } else {
      // An attention rank of connector nccl never replies: its first step request arrives instead.
      FrameHeader h;
      h.kind = FrameKind::kStepRequest;
      link->send(h, nullptr, Deadline::afterMs(2000));
      CHECK_THROWS(ffn.recvBootstrapReply(0, 2000), CommErrorKind::kProtocol, "step-request");
    }
  }
}

TEST(rendezvous_timeout_names_the_address) {
  int port = afdtest::freeBasePort(1);
  RendezvousConfig c = config(AfdTopology::of(1, 1), 0, port);
  c.rendezvousTimeoutMs = 300;
  AttentionRendezvous a(c);
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS(a.connect(nullptr), CommErrorKind::kTimeout, "FFN rank 0 at 127.0.0.1:" + std::to_string(port));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
}

TEST(port_in_use_is_a_clear_error) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous first(config(AfdTopology::of(1, 1), 0, port));
  CHECK_THROWS(FfnRendezvous(config(AfdTopology::of(1, 1), 0, port)), CommErrorKind::kConfig, "in use");
}

TEST(ffn_host_that_is_not_local_binds_every_interface) {
  int port = afdtest::freeBasePort(1);
  RendezvousConfig c = config(AfdTopology::of(1, 1), 0, port);
  c.ffnHosts = {"192.0.2.1"};  // TEST-NET-1: never an address of this machine
  FfnRendezvous ffn(c);
  CHECK_MSG(ffn.listenAddress() == "0.0.0.0:" + std::to_string(port), ffn.listenAddress());
  c.listenHost = "192.0.2.1";  // an explicit bind address is taken literally
  CHECK_THROWS(FfnRendezvous literal(c), CommErrorKind::kConfig, "not an address of this machine");
}

TEST(handshake_rejects_wrong_topology_and_gate) {
  int port = afdtest::freeBasePort(1);
  std::atomic<bool> stop{false};
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  std::thread server = acceptInBackground(ffn, stop);
  AttentionRendezvous wrongTopo(config(AfdTopology::of(2, 1), 0, port));
  CHECK_THROWS(wrongTopo.connect(nullptr), CommErrorKind::kConfig, "runs topology 2A1F");
  RendezvousConfig gate = config(AfdTopology::of(1, 1), 0, port);
  gate.model.gateOnAttention = true;
  AttentionRendezvous wrongGate(gate);
  CHECK_THROWS(wrongGate.connect(nullptr), CommErrorKind::kConfig, "gate placement");
  AttentionRendezvous good(config(AfdTopology::of(1, 1), 0, port));
  good.connect(nullptr);
  server.join();
  CHECK(ffn.peersJoined() == 1);
}

TEST(stranger_on_the_port_is_ignored) {
  int port = afdtest::freeBasePort(1);
  std::atomic<bool> stop{false};
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  std::thread server([&] { serveFfn(ffn, stop, nullptr); });
  Socket http = connectWithRetry("127.0.0.1", port, Deadline::afterMs(2000), nullptr, "ffn");
  const char* get = "GET / HTTP/1.1\r\nHost: x\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
  ::send(http.fd(), get, std::strlen(get), MSG_NOSIGNAL);
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  a.connect(nullptr);
  attentionStep(a, {1}, 0);
  a.shutdown("done");
  server.join();
}

// A process of another build (an addon rebuilt between two role starts) is refused at the
// handshake with a reason naming both versions, never joined to step with a payload layout
// it reads differently (the 2A2F "control payload has 0 stages" failure).
TEST(peer_of_another_wire_version_is_refused_at_the_handshake) {
  int port = afdtest::freeBasePort(1);
  std::atomic<bool> stop{false};
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  std::thread server = acceptInBackground(ffn, stop);  // ends kStopped below
  struct Join {  // stops and joins the server on every exit path
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop.store(true);
      if (t.joinable()) t.join();
    }
  } join{stop, server};
  const std::string reason = afdtest::refusalOfOldBuild(port, FrameKind::kHello);
  CHECK_MSG(reason.find("wire version " + std::to_string(kWireVersion)) != std::string::npos, reason);
  CHECK(ffn.peersJoined() == 0);
}

TEST(stalled_ffn_fails_the_step_within_the_deadline) {
  int port = afdtest::freeBasePort(1);
  RendezvousConfig c = config(AfdTopology::of(1, 1), 0, port);
  c.stepDeadlineMs = 300;
  FfnRendezvous ffn(c);
  std::atomic<bool> stop{false};
  std::thread server([&] {
    ffn.acceptPeers(&stop);
    ControlPayload p;
    std::string by;
    ffn.recvStep(&p, &stop, &by);  // announce the step, then never answer layer 0
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  AttentionRendezvous a(c);
  a.connect(nullptr);
  ControlPayload merged;
  uint32_t tokens[1] = {2};
  a.beginStep(tokens, 1, 0, &merged);
  std::vector<float> x(2 * kHidden), y(2 * kHidden);
  a.send(0, x.data(), x.size() * 4, {TransferKind::kHidden, 0, 0, 0}, {});
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS(a.recv(0, y.data(), y.size() * 4, {TransferKind::kFfnOutput, 0, 0, 0}, {}), CommErrorKind::kTimeout,
               "FFN rank 0 at 127.0.0.1");
  auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(waited >= std::chrono::milliseconds(250) && waited < std::chrono::milliseconds(1500));
  stop.store(true);
  server.join();
}

TEST(killed_ffn_is_reported_at_once) {
  int port = afdtest::freeBasePort(1);
  auto ffn = std::make_unique<FfnRendezvous>(config(AfdTopology::of(1, 1), 0, port));
  std::atomic<bool> stop{false};
  std::thread server([&] {
    ffn->acceptPeers(&stop);
    ControlPayload p;
    std::string by;
    ffn->recvStep(&p, &stop, &by);
    ffn.reset();  // the process "dies": sockets close without goodbye
  });
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  a.connect(nullptr);
  ControlPayload merged;
  uint32_t tokens[1] = {1};
  a.beginStep(tokens, 1, 0, &merged);
  server.join();
  std::vector<float> y(kHidden);
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS(a.recv(0, y.data(), y.size() * 4, {TransferKind::kFfnOutput, 0, 0, 0}, {}), CommErrorKind::kPeerClosed,
               "FFN rank 0");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500));
  CHECK(!a.connected());
}

TEST(lost_attention_peer_is_reported_to_the_ffn) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous ffn(config(AfdTopology::of(2, 1), 0, port));
  std::atomic<bool> stop{false};
  std::string error;
  std::thread server([&] {
    try {
      serveFfn(ffn, stop, nullptr);
    } catch (const CommError& e) {
      error = e.what();
    }
  });
  auto a0 = std::make_unique<AttentionRendezvous>(config(AfdTopology::of(2, 1), 0, port));
  AttentionRendezvous a1(config(AfdTopology::of(2, 1), 1, port));
  std::thread c0([&] { a0->connect(nullptr); });
  a1.connect(nullptr);
  c0.join();
  a0.reset();  // attention rank 0 dies while idle
  server.join();
  CHECK_MSG(error.find("attention rank 0") != std::string::npos, "error: " << error);
  ffn.closePeers("attention rank 0 was lost");
  std::atomic<int> unused{0};
  CHECK_THROWS(a1.pollStepCall(2000), CommErrorKind::kShutdown, "attention rank 0 was lost");
  (void)unused;
}

TEST(frame_header_carries_the_hold_under_its_checksum) {
  FrameHeader h;
  h.kind = FrameKind::kFfnOutput;
  h.byteLength = 16;
  h.holdUs = 123456;
  uint8_t bytes[kFrameHeaderBytes];
  encodeFrameHeader(h, bytes);
  FrameHeader back;
  CHECK(decodeFrameHeader(bytes, &back).empty());
  CHECK(back.holdUs == 123456);
  bytes[45] ^= 1;  // a bit of holdUs
  CHECK(decodeFrameHeader(bytes, &back).find("checksum") != std::string::npos);
}

namespace {
// Copies bytes from one socket to another, holding each chunk `delayMs` first: a slow
// wire between two TcpLinks, so an exchange's round trip has a known time on the wire.
std::thread slowWire(int from, int to, int delayMs) {
  return std::thread([=] {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(from, buf, sizeof buf);
      if (n <= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
      if (::write(to, buf, static_cast<size_t>(n)) != n) break;
    }
    ::shutdown(to, SHUT_WR);
  });
}
}  // namespace

TEST(wire_time_is_the_round_trip_less_the_peers_hold) {
  // a <-> [wire 20 ms each way] <-> b; b holds each exchange 30 ms before answering.
  int ab[2], ba[2], aEnd[2], bEnd[2];
  CHECK(::socketpair(AF_UNIX, SOCK_STREAM, 0, aEnd) == 0 && ::socketpair(AF_UNIX, SOCK_STREAM, 0, bEnd) == 0);
  ab[0] = aEnd[1];
  ab[1] = bEnd[1];
  ba[0] = bEnd[1];
  ba[1] = aEnd[1];
  std::thread w1 = slowWire(ab[0], ab[1], 20);
  std::thread w2 = slowWire(ba[0], ba[1], 20);
  {
    TcpLink a(Socket(aEnd[0]), "peer b", 5000);
    TcpLink b(Socket(bEnd[0]), "peer a", 5000);
    std::vector<float> x(kHidden, 1.0f), y(kHidden);
    for (uint32_t layer = 0; layer < 3; ++layer) {
      a.send(transferHeader({TransferKind::kHidden, layer, 0, 7}, x.size() * 4), x.data(), Deadline::afterMs(5000));
      b.recvExpected(FrameKind::kHidden, layer, 0, 7, y.data(), y.size() * 4, Deadline::afterMs(5000), nullptr);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // b's compute
      b.send(transferHeader({TransferKind::kFfnOutput, layer, 0, 7}, y.size() * 4), y.data(), Deadline::afterMs(5000));
      a.recvExpected(FrameKind::kFfnOutput, layer, 0, 7, y.data(), y.size() * 4, Deadline::afterMs(5000), nullptr);
      if (layer == 0) continue;  // b's first turn has no exchange of its own yet
      // a: round trip >= 2 x 20 + 30 ms; on the wire 2 x 20 ms (the hold is not wire time).
      CHECK_MSG(a.lastExchangeWireUs() >= 40'000 && a.lastExchangeWireUs() < 40'000 + 20'000, "a: " << a.lastExchangeWireUs() << " us");
      CHECK(a.lastRecvWireUs() == a.lastExchangeWireUs() / 2 && a.lastSendWireUs() == a.lastRecvWireUs());
      // b measured its own exchange (its output to a's next hidden): a held it ~0 ms.
      CHECK_MSG(b.lastExchangeWireUs() >= 40'000 && b.lastExchangeWireUs() < 40'000 + 20'000, "b: " << b.lastExchangeWireUs() << " us");
    }
    a.close();
    b.close();
  }
  ::shutdown(ab[1], SHUT_RDWR);
  ::shutdown(ba[1], SHUT_RDWR);
  w1.join();
  w2.join();
  ::close(aEnd[1]);
  ::close(bEnd[1]);
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
