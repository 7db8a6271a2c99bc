// comm::DataPlane over NCCL for the engine path (role processes): device buffers, the
// engine's stream, and the step deadline enforced by polling + ncclCommAbort. One
// two-rank communicator per attention <-> FFN pair (FFN rank = 0, attention rank = 1),
// so several attention ranks of a block may share one GPU (NCCL refuses two ranks of
// one communicator on one device). The unique ids travel over the TCP control
// connections (the FFN rank creates them; runtime/afd/device-plane.h).
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/data-plane.h"
#include "cuda/nccl/nccl-comm.h"
#include "cuda/wire-timer.h"

namespace afd::cuda {

// Rank inside a pair communicator: 0 for the FFN rank, 1 for the attention rank.
inline int pairRank(bool ffnRole) { return ffnRole ? 0 : 1; }

class NcclDataPlane final : public afd::comm::DataPlane {
 public:
  // ffnRole: this side is the FFN rank (peers = the block's attention ranks, one pair
  // communicator each, in block order) or an attention rank (one peer: the FFN rank).
  // defaultStream: used when a call passes a null stream (the engine's stream).
  NcclDataPlane(std::vector<std::unique_ptr<nccl::NcclComm>> comms, bool ffnRole, int stepDeadlineMs,
                cudaStream_t defaultStream);
  ~NcclDataPlane() override;

  int numPeers() const override { return static_cast<int>(comms_.size()); }
  afd::comm::MemoryKind memoryKind() const override { return afd::comm::MemoryKind::kDevice; }
  void send(int peer, const void* src, size_t bytes, const afd::comm::TransferTag& tag, afd::comm::CommStream stream) override;
  void recv(int peer, void* dst, size_t bytes, const afd::comm::TransferTag& tag, afd::comm::CommStream stream) override;
  void groupStart() override;
  void groupEnd() override;
  // Waits for everything enqueued on `stream` within the step deadline (abort + CommError otherwise).
  void synchronize(afd::comm::CommStream stream) override;
  void setPeerLostFlag(afd::comm::StopFlag flag) override { peerLost_ = flag; }
  afd::comm::WireTime wireTime(int peer, bool send) const override;
  // Records wire-time events around the next transfers (sampled steps only: they cost two event records).
  void setSampling(bool on) override { sampling_ = on; }
  void abort() {
    for (auto& c : comms_) c->abort();
  }

 private:
  int otherRank() const { return pairRank(!ffnRole_); }
  cudaStream_t streamOf(afd::comm::CommStream s) const {
    return s.handle ? static_cast<cudaStream_t>(s.handle) : defaultStream_;
  }
  std::vector<std::unique_ptr<nccl::NcclComm>> comms_;
  std::vector<nccl::NcclComm*> raw_;
  bool ffnRole_;
  int stepDeadlineMs_;
  cudaStream_t defaultStream_;
  bool sampling_ = false;
  cudaEvent_t done_ = nullptr;
  WireTimer timer_;  // start / end of the last sampled transfer per peer and direction
  afd::comm::StopFlag peerLost_ = nullptr;
};

}  // namespace afd::cuda
