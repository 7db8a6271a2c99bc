#include "cuda/device-buffer.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <utility>

#include "cuda/cuda-check.h"

namespace afd::cuda {
namespace {

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace

DeviceBuffer::DeviceBuffer(const std::string& what, size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t status = cudaMalloc(&data_, bytes);
  if (status == cudaSuccess) return;
  cudaGetLastError();
  data_ = nullptr;
  size_t freeBytes = 0;
  size_t totalBytes = 0;
  cudaMemGetInfo(&freeBytes, &totalBytes);
  cudaGetLastError();
  throw std::runtime_error("out of device memory: " + what + " needs " + gib(bytes) + " but only " + gib(freeBytes) +
                           " of " + gib(totalBytes) + " is free (" + cudaGetErrorString(status) +
                           "); lower the batch size, context length or KV cache fraction, or use a larger GPU");
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (data_ != nullptr) cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
}

void deviceMemoryInfo(size_t& freeBytes, size_t& totalBytes) {
  AFD_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
}

}  // namespace afd::cuda
