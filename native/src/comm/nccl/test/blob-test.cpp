// Unit tests of the GPU data plane's TCP bootstrap (BlobChannel) over loopback; run by
// native/src/comm/nccl/blob.test.ts.
#include <atomic>
#include <chrono>
#include <thread>

#include "comm/comm-error.h"
#include "comm/nccl/blob-exchange.h"
#include "comm/test/harness.h"

using afd::comm::BlobChannel;
using afd::comm::CommError;
using afd::comm::CommErrorKind;
using afd::comm::Listener;

TEST(blob_roundtrip_both_ways) {
  Listener listener("127.0.0.1", 0);
  const int port = listener.port();
  std::string got;
  std::thread ffn([&] {
    auto ch = BlobChannel::acceptOn(listener, 5000);
    const char id[128] = {1, 2, 3};
    ch->send("nccl-id", id, sizeof id);
    got = ch->recvString("stats", 5000);
  });
  auto ch = BlobChannel::connect("127.0.0.1", port, 5000);
  std::vector<uint8_t> id = ch->recv("nccl-id", 5000);
  CHECK(id.size() == 128 && id[0] == 1 && id[2] == 3 && id[127] == 0);
  ch->sendString("stats", "{\"steps\":3}");
  ffn.join();
  CHECK(got == "{\"steps\":3}");
}

TEST(blob_wrong_tag_names_both) {
  Listener listener("127.0.0.1", 0);
  const int port = listener.port();
  std::thread ffn([&] {
    auto ch = BlobChannel::acceptOn(listener, 5000);
    ch->sendString("error", "FFN side failed: out of memory");
  });
  auto ch = BlobChannel::connect("127.0.0.1", port, 5000);
  bool threw = false;
  try {
    ch->recv("nccl-id", 5000);
  } catch (const CommError& e) {
    threw = true;
    const std::string m = e.what();
    CHECK(e.kind() == CommErrorKind::kProtocol);
    CHECK(m.find("\"error\"") != std::string::npos && m.find("\"nccl-id\"") != std::string::npos);
    CHECK(m.find("out of memory") != std::string::npos);
  }
  ffn.join();
  CHECK(threw);
}

TEST(blob_accept_times_out_with_advice) {
  Listener listener("127.0.0.1", 0);
  bool threw = false;
  try {
    BlobChannel::acceptOn(listener, 100);
  } catch (const CommError& e) {
    threw = true;
    CHECK(e.kind() == CommErrorKind::kTimeout);
    CHECK(std::string(e.what()).find("start the attention side") != std::string::npos);
  }
  CHECK(threw);
}

TEST(blob_rejects_a_stranger) {
  Listener listener("127.0.0.1", 0);
  const int port = listener.port();
  std::thread stranger([&] {
    afd::comm::Socket s = afd::comm::connectWithRetry("127.0.0.1", port, afd::comm::Deadline::afterMs(5000), nullptr, "test");
    char junk[16] = "GET / HTTP/1.1";
    struct iovec iov{junk, sizeof junk};
    s.sendAll(&iov, 1, afd::comm::Deadline::afterMs(1000), "test");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  auto ch = BlobChannel::acceptOn(listener, 5000);
  bool threw = false;
  try {
    ch->recv("hello", 2000);
  } catch (const CommError& e) {
    threw = true;
    CHECK(e.kind() == CommErrorKind::kProtocol);
  }
  stranger.join();
  CHECK(threw);
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }

// peerClosed(): false while the peer is alive, also with unread data pending (it only
// peeks); true once the peer's end is gone, and the pending blob is still readable.
TEST(blob_peer_closed_peeks_without_consuming) {
  Listener listener("127.0.0.1", 0);
  const int port = listener.port();
  std::atomic<bool> sent{false}, release{false};
  std::thread ffn([&] {
    auto ch = BlobChannel::acceptOn(listener, 5000);
    ch->sendString("stats", "{}");
    sent.store(true);
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });  // the channel closes here
  auto ch = BlobChannel::connect("127.0.0.1", port, 5000);
  while (!sent.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(ch->readable(1000));
  CHECK(!ch->peerClosed());
  release.store(true);
  ffn.join();
  bool closed = false;
  for (int i = 0; i < 2000 && !closed; ++i) {
    closed = ch->peerClosed();
    if (!closed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(closed);
  CHECK(ch->recvString("stats", 1000) == "{}");
}
