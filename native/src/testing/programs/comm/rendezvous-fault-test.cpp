// Unit tests of the rendezvous link's failures over loopback TCP (comm/rendezvous.h):
// rendezvous timeouts, busy ports, handshake refusals (topology, gate, strangers, another
// wire version), a stalled FFN rank within the deadline, killed and lost peers.
// Build/run: native/src/comm/comm.test.ts.
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "testing/programs/comm/loopback.h"
#include "testing/programs/comm/old-build-peer.h"
#include "testing/programs/comm/ports.h"
#include "testing/programs/harness.h"

using namespace afd::comm;
using namespace afdtest;

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

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
