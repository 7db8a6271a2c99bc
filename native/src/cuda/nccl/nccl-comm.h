// One NCCL communicator (RAII) with the two things the AFD data plane needs beyond
// send/recv: a bounded wait on device work (a peer that stops answering fails the
// step within the deadline, after ncclCommAbort so the stuck kernels return and the
// process stays usable) and the NCCL environment of the config applied before NCCL
// first reads it, with NVLink multicast always off.
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <string>

#include "comm/deadline.h"
#include "cuda/nccl/nccl-api.h"

namespace afd::cuda::nccl {

// Sets every NAME=value of ncclEnv (config field ncclEnv) in this process's environment,
// then NCCL_NVLS_ENABLE=0 whatever was asked (multicast can take a shared host's GPUs
// down). Call before the first NCCL call of the process. Throws on a name that is not
// an NCCL_* variable.
void applyNcclEnv(const std::map<std::string, std::string>& ncclEnv);

// A fresh unique id (rank 0 of a communicator creates it and ships it to the others).
ncclUniqueId newUniqueId();

class NcclComm {
 public:
  // Joins the communicator; blocks until all nranks ranks joined (the TCP bootstrap
  // has already proven the others are alive). `peer` names the other side in errors.
  NcclComm(const ncclUniqueId& id, int nranks, int rank, std::string peer);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return nranks_; }
  bool aborted() const { return aborted_; }
  // Aborts outstanding operations (stuck kernels return); the communicator is dead after.
  // Idempotent. Waits at most kAbortWaitMs for ncclCommAbort, or until `drained` (an event
  // recorded after the communicator's kernels) is no longer pending; false when the abort
  // call had not returned (it goes on in the background: core/stuck-threads.h).
  bool abort(cudaEvent_t drained = nullptr);
  static constexpr int kAbortWaitMs = 2000;
  // Throws CommError(kPeerClosed) when NCCL reports an asynchronous error (peer gone).
  void checkAsync();

 private:
  ncclComm_t comm_ = nullptr;
  int nranks_ = 0, rank_ = 0;
  std::string peer_;
  bool aborted_ = false;
  bool abortReturned_ = false;
};

// Waits until `event` completed, polling (so a stuck peer cannot hang the caller): past
// the deadline, or when a communicator reports an error, every comm is aborted and a
// CommError naming `peer` is thrown. comms may be null (peer-memory path: then
// deviceError, when set, is a host-mapped word the wait kernels set on their own timeout).
// peerLost, when set, is raised by whoever watches the peer's control connection (EOF /
// reset: the peer process is gone); the wait then aborts at once instead of at the deadline.
void waitEventBounded(cudaEvent_t event, const afd::comm::Deadline& deadline, const std::string& peer,
                      NcclComm* const* comms, int numComms, const volatile int* deviceError = nullptr,
                      afd::comm::StopFlag stop = nullptr, afd::comm::StopFlag peerLost = nullptr);

}  // namespace afd::cuda::nccl
