// Unit tests of the connector's wire format and links: topology blocks, frame headers,
// the control payload (byte-identical to the TypeScript encoder) and a link's wire times:
// per direction on one clock, the round trip less the peer's hold across clocks. The rendezvous and control plane over loopback TCP are in
// rendezvous-test.cpp. Build/run: native/src/comm/comm.test.ts.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#include "comm/control-payload.h"
#include "comm/frame.h"
#include "comm/rendezvous.h"
#include "comm/tcp-link.h"
#include "comm/topology.h"
#include "testing/programs/harness.h"

using namespace afd::comm;

namespace {

constexpr uint32_t kHidden = 8;

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

// The bytes native/src/testing/controlPayload.ts encodes for stepId 12345, flags
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

TEST(frame_header_carries_the_send_stamp_and_echo_under_its_checksum) {
  FrameHeader h;
  h.kind = FrameKind::kHidden;
  h.sentAtNs = 1'765'000'000'123'456'789ull;
  h.clockDomain = 0xfeedfacecafebeefull;
  h.echoUs = 2150;
  h.echoLayer = 3;
  h.echoStage = 1;
  uint8_t bytes[kFrameHeaderBytes];
  encodeFrameHeader(h, bytes);
  FrameHeader back;
  CHECK(decodeFrameHeader(bytes, &back).empty());
  CHECK(back.sentAtNs == h.sentAtNs && back.clockDomain == h.clockDomain);
  CHECK(back.echoUs == 2150 && back.echoLayer == 3 && back.echoStage == 1);
  CHECK(FrameHeader{}.echoUs == kNoEcho);
  for (size_t at : {50, 60, 66, 70, 74}) {  // a bit of each new field
    bytes[at] ^= 4;
    CHECK_MSG(decodeFrameHeader(bytes, &back).find("checksum") != std::string::npos, "byte " << at);
    bytes[at] ^= 4;
  }
}

namespace {
// Copies bytes from one socket to another, holding each chunk `delayMs` first: a slow
// wire between two TcpLinks, so a transfer has a known time on the wire.
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

// Two slow wires between a's and b's far ends (a -> b held aToBMs, b -> a held bToAMs),
// shut down and joined on every way out of the test (a failed CHECK throws; a joinable
// std::thread at unwinding would terminate).
struct SlowWires {
  int aFar, bFar;
  std::thread aToB, bToA;
  SlowWires(int aFarEnd, int bFarEnd, int aToBMs, int bToAMs)
      : aFar(aFarEnd), bFar(bFarEnd), aToB(slowWire(aFarEnd, bFarEnd, aToBMs)), bToA(slowWire(bFarEnd, aFarEnd, bToAMs)) {}
  ~SlowWires() {
    ::shutdown(aFar, SHUT_RDWR);
    ::shutdown(bFar, SHUT_RDWR);
    aToB.join();
    bToA.join();
    ::close(aFar);
    ::close(bFar);
  }
};

TEST(wire_time_is_the_round_trip_less_the_peers_hold) {
  // a <-> [wire 20 ms each way] <-> b; b holds each exchange 60 ms before answering. Wire
  // time counting the hold would be >= 100 ms; the bound leaves 45 ms for a loaded machine.
  constexpr uint64_t kWireUs = 2 * 20'000, kSlackUs = 45'000;
  int aEnd[2], bEnd[2];
  CHECK(::socketpair(AF_UNIX, SOCK_STREAM, 0, aEnd) == 0 && ::socketpair(AF_UNIX, SOCK_STREAM, 0, bEnd) == 0);
  SlowWires wires(aEnd[1], bEnd[1], 20, 20);
  // Two clock domains: a and b play ranks on different hosts, so no one-way stamps.
  TcpLink a(Socket(aEnd[0]), "peer b", 5000, 0x1111);
  TcpLink b(Socket(bEnd[0]), "peer a", 5000, 0x2222);
  std::vector<float> x(kHidden, 1.0f), y(kHidden);
  for (uint32_t layer = 0; layer < 3; ++layer) {
    a.send(transferHeader({TransferKind::kHidden, layer, 0, 7}, x.size() * 4), x.data(), Deadline::afterMs(5000));
    b.recvExpected(FrameKind::kHidden, layer, 0, 7, y.data(), y.size() * 4, Deadline::afterMs(5000), nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // b's compute
    b.send(transferHeader({TransferKind::kFfnOutput, layer, 0, 7}, y.size() * 4), y.data(), Deadline::afterMs(5000));
    a.recvExpected(FrameKind::kFfnOutput, layer, 0, 7, y.data(), y.size() * 4, Deadline::afterMs(5000), nullptr);
    if (layer == 0) continue;  // b's first turn has no exchange of its own yet
    // a: round trip >= 2 x 20 + 60 ms; on the wire 2 x 20 ms (the hold is not wire time).
    CHECK_MSG(a.lastExchangeWireUs() >= kWireUs && a.lastExchangeWireUs() < kWireUs + kSlackUs, "a: " << a.lastExchangeWireUs() << " us");
    // Each direction gets half of it, labelled so: neither was timed by itself.
    const WireTime back = a.recvWire(), sent = a.sendWire();
    CHECK(back.basis == WireBasis::kRoundTripHalf && sent.basis == WireBasis::kRoundTripHalf);
    CHECK(back.us == a.lastExchangeWireUs() / 2 && sent.us == back.us);
    CHECK(back.tagged && back.layer == layer && back.stage == 0);
    // b measured its own exchange (its output to a's next hidden): a held it ~0 ms.
    CHECK_MSG(b.lastExchangeWireUs() >= kWireUs && b.lastExchangeWireUs() < kWireUs + kSlackUs, "b: " << b.lastExchangeWireUs() << " us");
  }
  a.close();
  b.close();
}

TEST(one_clock_times_each_direction_by_itself) {
  // a (attention) -> [5 ms] -> b (FFN), b -> [45 ms] -> a; b computes 30 ms per layer. Both
  // links read one clock (this host's): each direction is timed alone, and the delay of
  // the slow direction shows in it only. Round-trip halving would give ~25 ms both ways.
  constexpr uint64_t kAtoBUs = 5'000, kBtoAUs = 45'000, kSlackUs = 40'000;
  int aEnd[2], bEnd[2];
  CHECK(::socketpair(AF_UNIX, SOCK_STREAM, 0, aEnd) == 0 && ::socketpair(AF_UNIX, SOCK_STREAM, 0, bEnd) == 0);
  SlowWires wires(aEnd[1], bEnd[1], 5, 45);
  TcpLink a(Socket(aEnd[0]), "peer b", 5000);
  TcpLink b(Socket(bEnd[0]), "peer a", 5000);
  CHECK(a.recvWire().basis == WireBasis::kUnavailable && a.sendWire().basis == WireBasis::kUnavailable);
  std::vector<float> x(kHidden, 1.0f), logits(4, 0.5f), y(kHidden);
  for (uint32_t layer = 0; layer < 3; ++layer) {
    a.post(transferHeader({TransferKind::kHidden, layer, 1, 9}, x.size() * 4), x.data());
    a.send(transferHeader({TransferKind::kRouterLogits, layer, 1, 9}, logits.size() * 4), logits.data(), Deadline::afterMs(5000));
    b.recvExpected(FrameKind::kHidden, layer, 1, 9, y.data(), y.size() * 4, Deadline::afterMs(5000), nullptr);
    b.recvExpected(FrameKind::kRouterLogits, layer, 1, 9, logits.data(), logits.size() * 4, Deadline::afterMs(5000), nullptr);
    const WireTime aToF = b.recvWire();
    CHECK(aToF.basis == WireBasis::kOneWay && aToF.tagged && aToF.layer == layer && aToF.stage == 1);
    CHECK_MSG(aToF.us >= kAtoBUs && aToF.us < kAtoBUs + kSlackUs, "b received layer " << layer << " in " << aToF.us << " us");
    if (layer > 0) {  // a's hidden states echo its time of b's previous output
      const WireTime prev = b.sendWire();
      CHECK(prev.basis == WireBasis::kOneWay && prev.layer == layer - 1 && prev.us >= kBtoAUs);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // b's compute: no part of either direction
    b.send(transferHeader({TransferKind::kFfnOutput, layer, 1, 9}, y.size() * 4), y.data(), Deadline::afterMs(5000));
    a.recvExpected(FrameKind::kFfnOutput, layer, 1, 9, y.data(), y.size() * 4, Deadline::afterMs(5000), nullptr);
    const WireTime fToA = a.recvWire(), echoed = a.sendWire();
    CHECK(fToA.basis == WireBasis::kOneWay && fToA.layer == layer && fToA.stage == 1);
    CHECK_MSG(fToA.us >= kBtoAUs && fToA.us < kBtoAUs + kSlackUs, "a received layer " << layer << " in " << fToA.us << " us");
    // a learns its own direction from b's echo: the same number b measured, same transfer.
    CHECK(echoed.basis == WireBasis::kOneWay && echoed.tagged && echoed.layer == layer && echoed.stage == 1);
    CHECK(echoed.us == aToF.us);
    CHECK_MSG(static_cast<int64_t>(fToA.us) - static_cast<int64_t>(echoed.us) >= static_cast<int64_t>(kBtoAUs - kAtoBUs) * 8 / 10, "F->A " << fToA.us << " us, A->F " << echoed.us << " us");
    std::cout << "layer " << layer << ": A->F " << echoed.us << " us, F->A " << fToA.us << " us (one-way; wires 5 / 45 ms)\n";
  }
  a.close();
  b.close();
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
