// comm::DataPlane over peer memory (connector "peer", role processes on GPUs of one
// host): one IpcWire per attention <-> FFN pair. Every message lands in a fixed inbox
// of the receiver, written by the sender's kernel, with a device-side ready flag
// (cuda/ipc/ipc-wire.h); recv waits on the flag on the stream, then copies the inbox
// into dst. Built by cuda/ipc/ipc-role-plane.cc (bootstrap: runtime/afd/device-plane.h).
//
// Where a message lands: channel = the DBO stage of its tag, slot = inboxSlot(kind):
// hidden states and FFN outputs use slot 0, router logits slot 1. A slot is written
// again only after its previous message was consumed, by AFD's per-stage lock-step:
// attention sends layer L + 1 of a stage only after it received layer L's FFN output,
// which the FFN rank sends only after its stream copied layer L's hidden (and logits)
// out of the inbox; symmetrically the FFN rank sends layer L + 1's output only after
// attention's stream copied layer L's output (its layer L + 1 send follows that copy).
// The slot depends on the tag alone (no host counters), and the wire's sequence numbers
// live in device memory, so a captured CUDA graph step replays with the same inboxes
// and the right flags whether the other side replays a graph or runs eagerly.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/data-plane.h"
#include "cuda/ipc/ipc-wire.h"
#include "cuda/wire-timer.h"

namespace afd::cuda {

class IpcDataPlane final : public afd::comm::DataPlane {
 public:
  // wires: one per peer, connected (FFN rank: the block's attention ranks in block order;
  // attention rank: one, its FFN rank). defaultStream: used for a null stream (the
  // engine's). inboxLimit: how to raise the inbox size, for the too-large error.
  IpcDataPlane(std::vector<std::unique_ptr<IpcWire>> wires, bool ffnRole, int stepDeadlineMs,
                cudaStream_t defaultStream, std::string inboxLimit);
  ~IpcDataPlane() override;

  // The inbox slot of a message kind (see the header comment).
  static int inboxSlot(afd::comm::TransferKind kind) { return kind == afd::comm::TransferKind::kRouterLogits ? 1 : 0; }

  int numPeers() const override { return static_cast<int>(wires_.size()); }
  afd::comm::MemoryKind memoryKind() const override { return afd::comm::MemoryKind::kDevice; }
  void send(int peer, const void* src, size_t bytes, const afd::comm::TransferTag& tag, afd::comm::CommStream stream) override;
  void recv(int peer, void* dst, size_t bytes, const afd::comm::TransferTag& tag, afd::comm::CommStream stream) override;
  // Waits for everything enqueued on `stream` within the step deadline; a device wait
  // that timed out, a lost peer or the deadline aborts every wire and throws CommError.
  void synchronize(afd::comm::CommStream stream) override;
  void setPeerLostFlag(afd::comm::StopFlag flag) override;
  afd::comm::WireTime wireTime(int peer, bool send) const override;
  void setSampling(bool on) override { sampling_ = on; }
  void abort();

 private:
  cudaStream_t streamOf(afd::comm::CommStream s) const {
    return s.handle ? static_cast<cudaStream_t>(s.handle) : defaultStream_;
  }
  // Throws a clear error when the message does not fit its inbox or the tag is off.
  void check(int peer, size_t bytes, const afd::comm::TransferTag& tag, const char* what) const;

  std::vector<std::unique_ptr<IpcWire>> wires_;
  int stepDeadlineMs_;
  cudaStream_t defaultStream_;
  std::string inboxLimit_;
  bool sampling_ = false;
  cudaEvent_t done_ = nullptr;
  WireTimer timer_;  // start / end of the last sampled transfer per peer and direction
};

}  // namespace afd::cuda
