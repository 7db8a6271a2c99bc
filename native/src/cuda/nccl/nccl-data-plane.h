// comm::DataPlane over NCCL for the engine path (role processes): device buffers, the
// engine's stream, and the step deadline enforced by polling + ncclCommAbort. One
// communicator per FFN subgroup: FFN rank f is rank 0 and the attention ranks of its
// block are ranks 1..blockSize in block order (world order [F..., A...] restricted to
// the block). The unique id travels over the TCP control connection (the FFN rank
// creates it); see subgroupRank() for the mapping.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/data-plane.h"
#include "cuda/nccl/nccl-comm.h"

namespace afd::cuda {

// Rank inside the subgroup communicator: 0 for the FFN rank, 1 + peer index for an attention rank.
inline int subgroupRank(bool ffnRole, int peerIndex) { return ffnRole ? 0 : 1 + peerIndex; }

class NcclDataPlane final : public afd::comm::DataPlane {
 public:
  // ffnRole: this side is the FFN rank (peers = the block's attention ranks) or an
  // attention rank (one peer: the FFN rank). blockSize: attention ranks in the block.
  NcclDataPlane(std::unique_ptr<nccl::NcclComm> comm, bool ffnRole, int blockSize, int stepDeadlineMs);
  ~NcclDataPlane() override;

  int numPeers() const override { return ffnRole_ ? blockSize_ : 1; }
  void send(int peer, const void* src, size_t bytes, const afd::comm::TransferTag& tag, afd::comm::CommStream stream) override;
  void recv(int peer, void* dst, size_t bytes, const afd::comm::TransferTag& tag, afd::comm::CommStream stream) override;
  void groupStart() override;
  void groupEnd() override;
  // Waits for everything enqueued on `stream` within the step deadline (abort + CommError otherwise).
  void synchronize(afd::comm::CommStream stream) override;
  uint64_t lastWireTimeUs(int peer, bool send) const override;
  // Records wire-time events around the next transfers (sampled steps only: they cost two event records).
  void setSampling(bool on) { sampling_ = on; }
  void abort() { comm_->abort(); }

 private:
  int rankOf(int peer) const { return ffnRole_ ? 1 + peer : 0; }
  std::unique_ptr<nccl::NcclComm> comm_;
  bool ffnRole_;
  int blockSize_;
  int stepDeadlineMs_;
  bool sampling_ = false;
  cudaEvent_t done_ = nullptr;
  // [peer][send?1:0] start / end events of the last sampled transfer.
  std::vector<cudaEvent_t> start_, end_;
  std::vector<bool> recorded_;
};

}  // namespace afd::cuda
