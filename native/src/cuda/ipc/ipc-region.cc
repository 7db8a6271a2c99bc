#include "cuda/ipc/ipc-region.h"

#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "cuda/cuda-check.h"
#include "cuda/device-buffer.h"

namespace afd::cuda {
namespace {

std::vector<uint8_t> handleBytes(const cudaIpcMemHandle_t& h) {
  const auto* p = reinterpret_cast<const uint8_t*>(&h);
  return std::vector<uint8_t>(p, p + sizeof h);
}

class OwnedRegion final : public SharedRegion {
 public:
  explicit OwnedRegion(size_t bytes) : buffer_("shared KV region (peer-memory KV transfer)", bytes) {
    AFD_CUDA_CHECK(cudaMemset(buffer_.data(), 0, bytes));
    cudaIpcMemHandle_t h;
    AFD_CUDA_CHECK(cudaIpcGetMemHandle(&h, buffer_.data()));
    handle_ = handleBytes(h);
  }
  void* data() const override { return buffer_.data(); }
  size_t bytes() const override { return buffer_.bytes(); }
  const std::vector<uint8_t>& handle() const override { return handle_; }

 private:
  DeviceBuffer buffer_;
  std::vector<uint8_t> handle_;
};

class MappedRegion final : public SharedRegion {
 public:
  MappedRegion(void* data, size_t bytes, std::vector<uint8_t> handle) : data_(data), bytes_(bytes), handle_(std::move(handle)) {}
  ~MappedRegion() override { cudaIpcCloseMemHandle(data_); }
  void* data() const override { return data_; }
  size_t bytes() const override { return bytes_; }
  const std::vector<uint8_t>& handle() const override { return handle_; }

 private:
  void* data_;
  size_t bytes_;
  std::vector<uint8_t> handle_;
};

}  // namespace

std::unique_ptr<SharedRegion> createIpcRegion(size_t bytes) {
  AFD_CHECK(bytes > 0, "a shared region needs at least one byte");
  return std::make_unique<OwnedRegion>(bytes);
}

std::unique_ptr<SharedRegion> openIpcRegion(const std::vector<uint8_t>& handle, size_t bytes) {
  cudaIpcMemHandle_t h;
  AFD_CHECK(handle.size() == sizeof h, "a CUDA IPC handle has " << sizeof h << " bytes, got " << handle.size());
  std::memcpy(&h, handle.data(), sizeof h);
  void* p = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(std::string("cannot map the peer's KV memory (cudaIpcOpenMemHandle: ") + cudaGetErrorString(e) +
                "); both ranks must be on one host, with peer access between their GPUs, and the peer alive");
  }
  // The handle names the whole allocation: its size is known only by the owner, which sent it.
  return std::make_unique<MappedRegion>(p, bytes, handle);
}

}  // namespace afd::cuda
