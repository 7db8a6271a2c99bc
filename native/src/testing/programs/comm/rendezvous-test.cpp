// Unit tests of the rendezvous link over loopback TCP (comm/rendezvous.h): rendezvous in
// both start orders, the control-plane hub (idle peers called into steps), the data plane
// in DBO order and the device planes' bootstrap exchange. Refusals, deadlines and lost
// peers are in rendezvous-fault-test.cpp, frames and the control payload in
// comm-test.cpp. Build/run: native/src/comm/comm.test.ts.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "testing/programs/comm/loopback.h"
#include "testing/programs/comm/ports.h"
#include "testing/programs/harness.h"

using namespace afd::comm;
using namespace afdtest;

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

TEST(a_goodbye_before_the_close_is_read_back_after_a_lost_step) {
  int port = afdtest::freeBasePort(1);
  FfnRendezvous ffn(config(AfdTopology::of(1, 1), 0, port));
  AttentionRendezvous a(config(AfdTopology::of(1, 1), 0, port));
  a.adopt(dialAndAccept(ffn, a));
  CHECK_MSG(a.pendingGoodbye().empty(), "nothing was sent yet");
  ffn.closePeers("FFN rank 0 lost its expert-parallel group (FFN rank 1 closed its link mid-step)");
  for (int i = 0; i < 200 && !a.peerClosed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::string why = a.pendingGoodbye();
  CHECK_MSG(why.find("FFN rank 1 closed its link mid-step") != std::string::npos, "goodbye: " << why);
  CHECK_MSG(a.pendingGoodbye() == why, "the link keeps why it broke: " << a.pendingGoodbye());
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

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
