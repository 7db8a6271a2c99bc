// GpuWire through peer memory (one host, NVLink / PCIe P2P): each side exports its
// inboxes and ready flags with CUDA IPC; send is one kernel that writes the data
// straight into the peer's inbox and then bumps the peer's flag (grid-wide completion
// through a block counter), recv is a one-thread kernel spinning on the local flag.
// Sequence numbers live in device memory, so a captured graph replays correctly.
// A wait that outlives the step deadline sets a host-mapped error word and returns,
// so a dead peer fails the step instead of hanging the GPU; abort() ends such waits early.
#pragma once
#include <cstdint>
#include <string>

#include "cuda/device-buffer.h"
#include "cuda/nccl/gpu-wire.h"

namespace afd::cuda {

class IpcWire final : public GpuWire {
 public:
  // stepDeadlineMs bounds every device-side wait.
  IpcWire(size_t stageInboxBytes, size_t controlInboxBytes, int stepDeadlineMs, std::string peer);
  ~IpcWire() override;
  // The IPC handle of this side's inbox + flag region (64 bytes, sent to the peer).
  cudaIpcMemHandle_t exportHandle() const;
  // Maps the peer's region (its exportHandle()); both sides must use the same sizes.
  void connect(const cudaIpcMemHandle_t& remote);
  // Same process (GPU checks): writes go straight into `other`'s region, no IPC mapping
  // (CUDA refuses to open a handle in the process that exported it).
  void connectLocal(IpcWire& other);

  const char* name() const override { return "peer"; }
  void* inbox(int channel, int slot) override { return local(channel, slot); }
  size_t inboxBytes(int channel) const override { return channel == kControlChannel ? controlBytes_ : stageBytes_; }
  void send(int channel, int slot, const void* src, size_t bytes, cudaStream_t stream) override;
  void recv(int channel, int slot, size_t bytes, cudaStream_t stream) override;
  void wait(cudaEvent_t event, const afd::comm::Deadline& deadline, afd::comm::StopFlag stop) override;
  // Fails every later wait and ends device waits still spinning on this wire (they poll
  // the host-mapped error word), so a lost peer does not hold the stream until the deadline.
  void abort() override;
  // True once a wait timed out on the device or abort() ran.
  bool failed() const { return aborted_ || (hostError_ && *hostError_); }
  const std::string& peer() const override { return peer_; }

 private:
  size_t inboxOffset(int channel, int slot) const;
  size_t flagOffset(int channel, int slot) const { return flagsOffset_ + 8 * (channel * kWireSlots + slot); }
  void* local(int channel, int slot) { return region_.as<char>() + inboxOffset(channel, slot); }

  size_t stageBytes_, controlBytes_, flagsOffset_;
  int stepDeadlineMs_;
  std::string peer_;
  DeviceBuffer region_;    // inboxes then flags (written by the peer)
  DeviceBuffer counters_;  // per (channel, slot): send seq u64, recv expected u64, block done u32
  char* remote_ = nullptr;  // the peer's region, mapped
  bool remoteMapped_ = false;  // remote_ came from cudaIpcOpenMemHandle (closed on destruction)
  int* hostError_ = nullptr;    // host-mapped error word
  int* deviceError_ = nullptr;  // its device alias
  bool aborted_ = false;
};

}  // namespace afd::cuda
