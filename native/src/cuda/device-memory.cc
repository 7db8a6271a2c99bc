#include "cuda/device-memory.h"

#include <string>

#include "core/error.h"
#include "cuda/cuda-check.h"
#include "cuda/host-helpers.h"

namespace afd::cuda {

DeviceMemory::DeviceMemory(StreamContext& ctx) : ctx_(ctx) {
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, ctx.deviceIndex()) != cudaSuccess) cudaGetLastError();
  streamOrdered_ = pools != 0;
}

uint64_t DeviceMemory::freeMemoryBytes() const {
  size_t freeBytes = 0, totalBytes = 0;
  // Freed blocks go back to the device's memory pool; a synchronization trims the pool
  // (release threshold 0), so they count as free here.
  if (streamOrdered_ && !ctx_.capturing()) AFD_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
  AFD_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  return freeBytes;
}

void* DeviceMemory::allocate(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  ctx_.refuseWhileCapturing("a device allocation");
  ctx_.bumpEpoch();
  const cudaError_t status = streamOrdered_ ? cudaMallocAsync(&p, bytes, ctx_.stream()) : cudaMalloc(&p, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    size_t freeBytes = 0, totalBytes = 0;
    cudaMemGetInfo(&freeBytes, &totalBytes);
    throw Error("out of GPU memory on device " + std::to_string(ctx_.deviceIndex()) + ": asked for " +
                std::to_string(bytes >> 20) + " MiB with " + std::to_string(freeBytes >> 20) + " MiB of " +
                std::to_string(totalBytes >> 20) + " MiB free; lower the KV cache size or batch, or use a larger GPU");
  }
  return p;
}

void DeviceMemory::release(void* ptr) {
  if (ptr == nullptr) return;
  ctx_.bumpEpoch();
  if (ctx_.capturing()) ctx_.abortCapture();  // release runs in destructors (no throw): end the capture, free normally
  cudaStream_t stream = ctx_.stream();
  if (streamOrdered_ && stream != nullptr) {
    // After the stream's work that may still read it, with no wait on the host or on any
    // other stream (cudaFree would wait for the whole device: with several engines in one
    // process, for another rank's exchange wait that waits for this thread).
    cudaFreeAsync(ptr, stream);
    return;
  }
  if (stream != nullptr) cudaStreamSynchronize(stream);
  cudaFree(ptr);
}

void DeviceMemory::copyToDevice(void* dst, const void* src, size_t bytes) {
  ctx_.refuseWhileCapturing("a host-to-device copy");
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_.stream()));
  AFD_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));  // the host buffer may be reused at once
}

void DeviceMemory::copyToHost(void* dst, const void* src, size_t bytes) {
  ctx_.refuseWhileCapturing("a device-to-host copy");
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream()));
  AFD_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
}

void DeviceMemory::copyDevice(void* dst, const void* src, size_t bytes) {
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx_.stream()));
}

void DeviceMemory::fillZero(void* dst, size_t bytes) { AFD_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, ctx_.stream())); }

void* DeviceMemory::scratch(size_t bytes) {
  if (bytes > scratch_.bytes()) {
    ctx_.refuseWhileCapturing("growing the backend scratch");
    ctx_.bumpEpoch();
    ctx_.synchronize();
    scratch_ = DeviceBuffer();
    scratch_ = DeviceBuffer("CUDA backend scratch", align256(bytes + bytes / 2));
  }
  return scratch_.data();
}

}  // namespace afd::cuda
