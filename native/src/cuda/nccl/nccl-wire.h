// GpuWire over NCCL: a 2-rank communicator per DBO stage (F = rank 0, A = rank 1, as in
// the world order [F..., A...]); the control payload rides stage 0's communicator ahead
// of the layer loop. Communicators are created by the caller (bootstrap) and owned here.
#pragma once
#include <memory>
#include <vector>

#include "cuda/device-buffer.h"
#include "cuda/nccl/gpu-wire.h"
#include "cuda/nccl/nccl-comm.h"

namespace afd::cuda {

class NcclWire final : public GpuWire {
 public:
  // comms: one per stage (stage 1's may be null when DBO is off); peerRank: the other
  // side's rank in those communicators; inboxBytes: capacity per stage slot.
  NcclWire(std::vector<std::unique_ptr<nccl::NcclComm>> comms, int peerRank, size_t stageInboxBytes,
           size_t controlInboxBytes, std::string peer);
  const char* name() const override { return "nccl"; }
  void* inbox(int channel, int slot) override;
  size_t inboxBytes(int channel) const override { return channel == kControlChannel ? controlBytes_ : stageBytes_; }
  void send(int channel, int slot, const void* src, size_t bytes, cudaStream_t stream) override;
  void recv(int channel, int slot, size_t bytes, cudaStream_t stream) override;
  void wait(cudaEvent_t event, const afd::comm::Deadline& deadline, afd::comm::StopFlag stop) override;
  void abort() override;
  const std::string& peer() const override { return peer_; }

 private:
  nccl::NcclComm& commOf(int channel);
  std::vector<std::unique_ptr<nccl::NcclComm>> comms_;
  std::vector<nccl::NcclComm*> raw_;
  int peerRank_;
  size_t stageBytes_, controlBytes_;
  DeviceBuffer inboxes_;  // [stages][slots][stageBytes] then [slots][controlBytes]
  std::string peer_;
};

}  // namespace afd::cuda
