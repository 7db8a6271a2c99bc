// Unit tests of the expert-parallel FFN group's mesh (comm/ep-mesh.h) over loopback TCP:
// forming in any order, the step barrier (largest stage count, idle ranks woken), the
// dispatch / combine all-to-alls, shutdown notices, closed and silent peers, refusals and
// forming again. Build/run: native/src/comm/epMesh.test.ts.
#include <poll.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/ep-mesh.h"
#include "testing/programs/comm/old-build-peer.h"
#include "testing/programs/comm/ports.h"
#include "testing/programs/harness.h"

using namespace afd::comm;

namespace {

EpMeshConfig config(int numRanks, int rank, int basePort, int deadlineMs = 2000) {
  EpMeshConfig c;
  c.numRanks = numRanks;
  c.rank = rank;
  c.hosts.assign(numRanks, "127.0.0.1");
  c.basePort = basePort;
  c.deadlineMs = deadlineMs;
  c.rendezvousTimeoutMs = 5000;
  c.identity = "test model";
  return c;
}

// F meshes on fresh ports, formed (each rank in its own thread, highest rank first).
std::vector<std::unique_ptr<EpMesh>> formed(int numRanks, int deadlineMs = 2000) {
  const int base = afdtest::freeBasePort(numRanks);
  std::vector<std::unique_ptr<EpMesh>> meshes;
  for (int r = 0; r < numRanks; ++r) meshes.push_back(std::make_unique<EpMesh>(config(numRanks, r, base, deadlineMs)));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(numRanks);
  for (int r = numRanks - 1; r >= 0; --r) {
    threads.emplace_back([&, r] {
      try {
        meshes[r]->form(nullptr);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < numRanks; ++r) CHECK_MSG(errors[r].empty(), "rank " << r << ": " << errors[r]);
  return meshes;
}

// Runs f(rank) on every rank at once; returns each rank's error ("" = none).
std::vector<std::string> onEveryRank(int numRanks, const std::function<void(int)>& f) {
  std::vector<std::string> errors(numRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < numRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        f(r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

void expectNoErrors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) CHECK_MSG(errors[r].empty(), "rank " << r << ": " << errors[r]);
}

// Peer r's index in a mesh's pollRanks(), which is readable within timeoutMs; -1 when none.
int readablePeer(EpMesh& m, int timeoutMs) {
  std::vector<int> fds = m.pollFds();
  std::vector<pollfd> p;
  for (int fd : fds) p.push_back(pollfd{fd, POLLIN, 0});
  if (::poll(p.data(), p.size(), timeoutMs) <= 0) return -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i].revents != 0) return static_cast<int>(i);
  }
  return -1;
}

// One dispatch all-to-all where rank r sends rank j (r * 10 + j + 1) bytes of value r.
void dispatchPattern(EpMesh& m, uint32_t layer) {
  const int F = m.numRanks(), me = m.rank();
  std::vector<std::vector<uint8_t>> out(F), in(F);
  std::vector<ByteSpan> send(F);
  for (int j = 0; j < F; ++j) {
    out[j].assign(static_cast<size_t>(me * 10 + j + 1), static_cast<uint8_t>(me));
    send[j] = {out[j].data(), out[j].size()};
  }
  m.exchange(FrameKind::kEpDispatch, layer, 0, send, in, nullptr, 1 << 20, nullptr);
  for (int j = 0; j < F; ++j) {
    if (j == me) continue;
    CHECK_MSG(in[j].size() == static_cast<size_t>(j * 10 + me + 1), "rank " << me << " got " << in[j].size() << " bytes from " << j);
    for (uint8_t b : in[j]) CHECK(b == j);
  }
  // The combine sends each source back exactly what it expects (what it sent here).
  std::vector<size_t> expect(F);
  std::vector<std::vector<uint8_t>> back(F);
  for (int j = 0; j < F; ++j) {
    expect[j] = out[j].size();
    send[j] = {in[j].data(), in[j].size()};
  }
  m.exchange(FrameKind::kEpCombine, layer, 0, send, back, &expect, 0, nullptr);
  for (int j = 0; j < F; ++j) {
    if (j == me) continue;
    CHECK(back[j].size() == out[j].size());
    for (uint8_t b : back[j]) CHECK(b == me);
  }
}

using Clock = std::chrono::steady_clock;
int64_t msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

}  // namespace

TEST(forms_in_any_order_and_agrees_on_the_largest_stage_count) {
  auto m = formed(3);
  std::vector<int> stages(3);
  expectNoErrors(onEveryRank(3, [&](int r) {
    std::string by;
    stages[r] = m[r]->beginStep(r == 1 ? 2 : 1, &by);
    CHECK(by.empty());
  }));
  for (int s : stages) CHECK_MSG(s == 2, "a rank saw " << s << " stages");
  expectNoErrors(onEveryRank(3, [&](int r) {
    dispatchPattern(*m[r], 0);
    dispatchPattern(*m[r], 2);
  }));
  // The next step is numbered 1 on every rank.
  for (auto& mesh : m) CHECK(mesh->step() == 1);
}

TEST(the_step_start_carries_the_rows_and_the_group_agrees_on_the_largest) {
  auto m = formed(3);
  std::vector<int64_t> most(3, -1);
  expectNoErrors(onEveryRank(3, [&](int r) {
    std::string by;
    const int64_t rows[2] = {10 + r, r == 2 ? 40 : 0};
    CHECK(m[r]->beginStep(r == 2 ? 2 : 1, &by, rows, &most[r]) == 2);
  }));
  for (int64_t n : most) CHECK_MSG(n == 40, "a rank saw a largest stage of " << n << " rows");
  // Without rows (the host exchange does not need them) a start still counts stages.
  expectNoErrors(onEveryRank(3, [&](int r) {
    std::string by;
    int64_t rows = -1;
    CHECK(m[r]->beginStep(1, &by, nullptr, &rows) == 1 && rows == 0);
  }));
}

TEST(all_gather_gives_every_rank_every_blob_and_a_closed_peer_is_seen) {
  auto m = formed(3);
  std::vector<std::vector<std::vector<uint8_t>>> got(3);
  expectNoErrors(onEveryRank(3, [&](int r) {
    got[r] = m[r]->allGather(std::vector<uint8_t>(5 + r, static_cast<uint8_t>(r + 1)), 64, nullptr);
  }));
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 3; ++j) {
      CHECK_MSG(got[r][j] == std::vector<uint8_t>(5 + j, static_cast<uint8_t>(j + 1)), "rank " << r << " got rank " << j << "'s blob wrong");
    }
  }
  CHECK(m[0]->closedPeer() == -1);
  m[2]->close("test");
  const auto t0 = Clock::now();
  while (m[0]->closedPeer() != 2 && msSince(t0) < 2000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK_MSG(m[0]->closedPeer() == 2, "rank 0 did not see rank 2 close (" << m[0]->closedPeer() << ")");
}

TEST(an_idle_rank_is_woken_by_the_first_step_start) {
  auto m = formed(2);
  std::string by0;
  int stages0 = 0;
  std::thread busy([&] { stages0 = m[0]->beginStep(2, &by0); });
  const int index = readablePeer(*m[1], 2000);
  CHECK_MSG(index == 0, "rank 1 was not woken (" << index << ")");
  std::string by1;
  CHECK(m[1]->absorbWake(static_cast<size_t>(index), &by1));
  CHECK(m[1]->beginStep(1, &by1) == 2);  // reads nothing again: the start was absorbed
  busy.join();
  CHECK(stages0 == 2 && by0.empty() && by1.empty());
}

TEST(a_shutdown_notice_stops_idle_and_waiting_ranks) {
  auto m = formed(3);
  std::string waitingBy;
  int waitingStages = -1;
  std::thread waiting([&] { waitingStages = m[2]->beginStep(1, &waitingBy); });
  m[0]->notifyShutdown("shutdown requested by attention rank 0");
  const int index = readablePeer(*m[1], 2000);
  CHECK(index >= 0 && m[1]->pollRanks()[index] == 0);
  std::string idleBy;
  CHECK(!m[1]->absorbWake(static_cast<size_t>(index), &idleBy));
  CHECK_MSG(idleBy.find("FFN rank 0") != std::string::npos && idleBy.find("attention rank 0") != std::string::npos, idleBy);
  waiting.join();
  CHECK_MSG(waitingStages == 0 && waitingBy.find("FFN rank 0") != std::string::npos, waitingStages << " " << waitingBy);
}

TEST(a_closed_peer_fails_the_exchange_at_once_naming_it) {
  auto m = formed(2, 5000);
  expectNoErrors(onEveryRank(2, [&](int r) {
    std::string by;
    m[r]->beginStep(1, &by);
  }));
  m[1]->close("FFN rank 1 lost attention rank 3");
  const auto t0 = Clock::now();
  std::vector<std::vector<uint8_t>> in(2);
  std::vector<ByteSpan> send(2);
  CHECK_THROWS(m[0]->exchange(FrameKind::kEpDispatch, 0, 0, send, in, nullptr, 1024, nullptr), CommErrorKind::kShutdown,
               "FFN rank 1");
  CHECK_MSG(msSince(t0) < 2000, "took " << msSince(t0) << " ms");
}

TEST(a_silent_peer_fails_the_exchange_at_the_deadline_naming_it) {
  auto m = formed(2, 300);
  expectNoErrors(onEveryRank(2, [&](int r) {
    std::string by;
    m[r]->beginStep(1, &by);
  }));
  const auto t0 = Clock::now();
  std::vector<std::vector<uint8_t>> in(2);
  std::vector<ByteSpan> send(2);
  try {
    m[0]->exchange(FrameKind::kEpDispatch, 1, 0, send, in, nullptr, 1024, nullptr);
    CHECK_MSG(false, "the exchange did not time out");
  } catch (const EpGroupError& e) {
    CHECK_MSG(e.kind() == CommErrorKind::kTimeout, e.what());
    CHECK_MSG(std::string(e.what()).find("FFN rank 1") != std::string::npos, e.what());
  }
  const int64_t ms = msSince(t0);
  CHECK_MSG(ms >= 250 && ms < 3000, "took " << ms << " ms for a 300 ms deadline");
}

TEST(a_peer_of_another_model_is_refused_naming_both) {
  const int base = afdtest::freeBasePort(2);
  EpMesh zero(config(2, 0, base));
  EpMeshConfig other = config(2, 1, base);
  other.identity = "another model";
  EpMesh one(other);
  std::string zeroError;
  std::thread accepting([&] {
    try {
      zero.form(nullptr, 1500);
    } catch (const std::exception& e) {
      zeroError = e.what();
    }
  });
  CHECK_THROWS(one.form(nullptr, 1500), CommErrorKind::kConfig, "runs [another model] but FFN rank 0 runs [test model]");
  accepting.join();
  CHECK_MSG(zeroError.find("did not connect before the rendezvous timeout") != std::string::npos, zeroError);
}

TEST(a_peer_of_another_wire_version_is_refused_at_once) {
  const int base = afdtest::freeBasePort(2);
  EpMesh zero(config(2, 0, base));
  std::thread accepting([&] {
    try {
      zero.form(nullptr, 2000);
    } catch (const std::exception&) {
      // the old build never joins: the rendezvous times out
    }
  });
  const std::string reason = afdtest::refusalOfOldBuild(base, FrameKind::kEpHello);
  CHECK_MSG(reason.find("FFN rank 0 speaks AFD wire version " + std::to_string(kWireVersion)) != std::string::npos, reason);
  accepting.join();
}

TEST(the_group_forms_again_after_a_failure) {
  auto m = formed(3);
  m[1]->close("FFN rank 1 restarting");
  expectNoErrors(onEveryRank(3, [&](int r) { m[r]->form(nullptr); }));
  expectNoErrors(onEveryRank(3, [&](int r) {
    std::string by;
    CHECK(m[r]->beginStep(1, &by) == 1);
    dispatchPattern(*m[r], 1);
  }));
}

TEST(a_dispatch_larger_than_the_bound_is_refused) {
  auto m = formed(2);
  std::vector<std::string> errors = onEveryRank(2, [&](int r) {
    std::string by;
    m[r]->beginStep(1, &by);
    std::vector<uint8_t> big(r == 1 ? 4096 : 16);
    std::vector<std::vector<uint8_t>> in(2);
    std::vector<ByteSpan> send(2, ByteSpan{big.data(), big.size()});
    m[r]->exchange(FrameKind::kEpDispatch, 0, 0, send, in, nullptr, 1024, nullptr);
  });
  CHECK_MSG(errors[0].find("4096 bytes") != std::string::npos, errors[0]);
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
