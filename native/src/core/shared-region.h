// Memory another process on this host maps (prefill / decode KV transfer by peer memory):
// the owner allocates a region (Backend::allocateShared) and hands its handle to a peer,
// which maps the same bytes (Backend::openShared) and copies from them with copyDevice.
// CPU: a file mapped shared (the handle is its path); CUDA: a cudaMalloc allocation and its
// CUDA IPC handle. Destroying the owner's region frees it (and removes the file); destroying
// a peer's mapping unmaps it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace afd {

class SharedRegion {
 public:
  virtual ~SharedRegion() = default;
  virtual void* data() const = 0;
  virtual size_t bytes() const = 0;
  // What a peer passes to openShared (opaque bytes; the same for the owner and its peers).
  virtual const std::vector<uint8_t>& handle() const = 0;
};

}  // namespace afd
