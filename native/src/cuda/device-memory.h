// The CUDA backend's device memory: stream-ordered allocation (cudaMallocAsync /
// cudaFreeAsync on the backend's stream, where the device has memory pools), the host
// transfers, and the one grow-only scratch buffer the op families carve their per-call
// buffers from. Growing anything bumps the stream's allocation epoch and is refused
// while a graph is being captured.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/device-buffer.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class DeviceMemory {
 public:
  explicit DeviceMemory(StreamContext& ctx);

  void* allocate(size_t bytes);  // throws afd::Error naming the sizes when out of memory
  void release(void* ptr);       // never throws (destructors call it)
  uint64_t freeMemoryBytes() const;
  void copyToDevice(void* dst, const void* hostSrc, size_t bytes);  // the host buffer is free on return
  void copyToHost(void* hostDst, const void* src, size_t bytes);    // waits for prior ops
  void copyDevice(void* dst, const void* src, size_t bytes);
  void fillZero(void* dst, size_t bytes);
  // Scratch of at least `bytes`, valid until the next call (grows; never shrinks).
  void* scratch(size_t bytes);

 private:
  StreamContext& ctx_;
  // Device buffers come from the stream-ordered allocator where the device has memory
  // pools: freeing one never waits for the device.
  bool streamOrdered_ = false;
  DeviceBuffer scratch_;
};

}  // namespace afd::cuda
