#include "cuda/nccl/nccl-comm.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "comm/comm-error.h"
#include "core/error.h"
#include "core/stuck-threads.h"
#include "cuda/cuda-check.h"

namespace afd::cuda::nccl {

using afd::comm::CommError;
using afd::comm::CommErrorKind;

void applyNcclEnv(const std::map<std::string, std::string>& ncclEnv) {
  for (const auto& [name, value] : ncclEnv) {
    AFD_CHECK(name.rfind("NCCL_", 0) == 0,
              "ncclEnv may only set NCCL_* variables (got \"" << name << "\"); put other variables in the process environment");
    if (name == "NCCL_NVLS_ENABLE") continue;  // forced off below
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
}

ncclUniqueId newUniqueId() {
  ncclUniqueId id{};
  checkNccl(ncclApi().getUniqueId(&id), "ncclGetUniqueId");
  return id;
}

NcclComm::NcclComm(const ncclUniqueId& id, int nranks, int rank, std::string peer)
    : nranks_(nranks), rank_(rank), peer_(std::move(peer)) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  const ncclResult_t r = ncclApi().commInitRank(&comm_, nranks, id, rank);
  if (r != ncclSuccess) {
    comm_ = nullptr;
    throw CommError(CommErrorKind::kSystem, std::string("ncclCommInitRank (rank ") + std::to_string(rank) + " of " +
                                                std::to_string(nranks) + ", with " + peer_ + ") failed: " +
                                                ncclApi().getErrorString(r) +
                                                "; check that both GPUs are visible and NCCL_* settings in ncclEnv");
  }
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  if (aborted_) return;
  ncclApi().commDestroy(comm_);
}

bool NcclComm::abort(cudaEvent_t drained) {
  if (comm_ == nullptr || aborted_) return abortReturned_;
  aborted_ = true;
  // ncclCommAbort on a thread with a bounded wait: a failing step must reach its caller
  // within the deadline even if NCCL's teardown blocks on a dead peer (then the thread
  // is left behind and the communicator leaks; the process stays responsive). The abort
  // flag ends NCCL's kernels first, so once `drained` (an event after them) is no longer
  // pending the stream is free and the caller need not wait for the host-side teardown.
  auto done = std::make_shared<std::atomic<bool>>(false);
  ncclComm_t comm = comm_;
  stuckNativeThreads().fetch_add(1);
  std::thread([comm, done] {
    ncclApi().commAbort(comm);
    done->store(true);
    stuckNativeThreads().fetch_sub(1);
  }).detach();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAbortWaitMs);
  while (!done->load() && std::chrono::steady_clock::now() < until) {
    if (drained != nullptr && cudaEventQuery(drained) != cudaErrorNotReady) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cudaGetLastError();  // an event of an aborted stream may report an error; it is not this caller's
  abortReturned_ = done->load();
  return abortReturned_;
}

void NcclComm::checkAsync() {
  if (comm_ == nullptr || aborted_) return;
  ncclResult_t state = ncclSuccess;
  ncclApi().commGetAsyncError(comm_, &state);
  if (state != ncclSuccess && state != ncclInProgress) {
    abort();
    throw CommError(CommErrorKind::kPeerClosed, "NCCL lost " + peer_ + ": " + ncclApi().getErrorString(state) +
                                                    "; the communicator was aborted (restart the peer to rejoin)");
  }
}

void waitEventBounded(cudaEvent_t event, const afd::comm::Deadline& deadline, const std::string& peer,
                      NcclComm* const* comms, int numComms, const volatile int* deviceError, afd::comm::StopFlag stop,
                      afd::comm::StopFlag peerLost) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto lastCheck = start;
  for (uint64_t spin = 0;; ++spin) {
    const cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) AFD_CUDA_CHECK(q);
    const auto now = Clock::now();
    // Spin for the first 200 us (a round trip is microseconds), then yield.
    if (now - start > std::chrono::microseconds(200)) std::this_thread::yield();
    if (now - lastCheck < std::chrono::milliseconds(1)) continue;
    lastCheck = now;
    for (int i = 0; i < numComms; ++i)
      if (comms[i]) comms[i]->checkAsync();
    if (deviceError && *deviceError) break;
    const bool stopped = stop && stop->load();
    const bool lost = peerLost && peerLost->load();
    if (deadline.passed() || stopped || lost) {
      bool returned = true;
      for (int i = 0; i < numComms; ++i)
        if (comms[i]) returned = comms[i]->abort(event) && returned;
      if (stopped) throw CommError(CommErrorKind::kStopped, "stopped while waiting for " + peer);
      // NCCL planes abort their communicators here; the peer-memory wire aborts in its caller.
      const std::string abortWhat = numComms > 0 ? "NCCL abort" : "peer-memory wire abort";
      if (lost) {
        throw CommError(CommErrorKind::kPeerClosed,
                        peer + " closed its control connection during the step (the process is gone); the GPU data plane "
                               "was aborted (" + abortWhat + std::string(returned ? "" : "; its host-side teardown goes on in the background") +
                            ") and the step failed after " +
                            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()) +
                            " ms; restart the peer to rejoin");
      }
      throw CommError(CommErrorKind::kTimeout,
                      peer + " did not answer within the step deadline; the GPU data plane was aborted (" + abortWhat +
                          std::string(returned ? "" : "; its host-side teardown goes on in the background") +
                          ") and the step failed; restart the peer to rejoin");
    }
  }
  if (deviceError && *deviceError) {
    throw CommError(CommErrorKind::kTimeout, peer + " did not signal within the step deadline (peer-memory wait timed "
                                                    "out on the device); the step failed; restart the peer to rejoin");
  }
}

}  // namespace afd::cuda::nccl
