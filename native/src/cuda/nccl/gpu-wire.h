// The GPU data path between one attention rank and its FFN rank, in device memory and
// on streams, so it can sit inside a captured CUDA graph. Data always lands in an inbox
// owned by the wire (stable addresses for graphs and for peer-memory writes):
//   channel = DBO stage (0, 1) or kControlChannel; slot = layer parity (double buffer:
//   layer L + 1 may be in flight while layer L's inbox is still read).
// Two implementations: NcclWire (ncclSend/ncclRecv, one communicator per stage so the
// stages never wait on each other; works across hosts) and IpcWire (CUDA IPC inboxes
// written by the sender's kernel, device-side ready flags; one host only).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "comm/deadline.h"

namespace afd::cuda {

constexpr int kWireStages = 2;
constexpr int kWireSlots = 2;
constexpr int kControlChannel = kWireStages;  // the per-step control payload
constexpr int kWireChannels = kWireStages + 1;

class GpuWire {
 public:
  virtual ~GpuWire() = default;
  virtual const char* name() const = 0;  // "nccl" | "peer"
  // Device inbox of (channel, slot): where the peer's send(channel, slot) lands.
  virtual void* inbox(int channel, int slot) = 0;
  virtual size_t inboxBytes(int channel) const = 0;
  // Enqueues on stream: bytes from src (device) into the peer's inbox(channel, slot).
  virtual void send(int channel, int slot, const void* src, size_t bytes, cudaStream_t stream) = 0;
  // Enqueues on stream: wait until the peer's send into inbox(channel, slot) arrived.
  virtual void recv(int channel, int slot, size_t bytes, cudaStream_t stream) = 0;
  // Host: waits for `event` within the deadline; on timeout or a lost peer the wire is
  // aborted and a CommError naming the peer is thrown.
  virtual void wait(cudaEvent_t event, const afd::comm::Deadline& deadline, afd::comm::StopFlag stop = nullptr) = 0;
  // Fails every later wait at once (the peer is known to be gone). Idempotent.
  virtual void abort() = 0;
  virtual const std::string& peer() const = 0;
  // A flag raised by whoever watches the peer's TCP side channel when it closes (the peer
  // process is gone): later waits then fail at once instead of at the deadline.
  void setPeerLostFlag(afd::comm::StopFlag flag) { peerLost_ = flag; }

 protected:
  afd::comm::StopFlag peerLost_ = nullptr;
};

}  // namespace afd::cuda
