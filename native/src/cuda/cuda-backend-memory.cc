// CudaBackend's device memory: stream-ordered allocation (cudaMallocAsync / cudaFreeAsync
// on the engine's stream, where the device has memory pools) and the host transfers.
#include <string>

#include "core/error.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

uint64_t CudaBackend::freeMemoryBytes() const {
  size_t freeBytes = 0, totalBytes = 0;
  // Freed blocks go back to the device's memory pool; a synchronization trims the pool
  // (release threshold 0), so they count as free here.
  if (streamOrdered_ && !capturing_) AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  AFD_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  return freeBytes;
}

void* CudaBackend::allocate(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  refuseWhileCapturing("a device allocation");
  ++epoch_;
  const cudaError_t status = streamOrdered_ ? cudaMallocAsync(&p, bytes, stream_) : cudaMalloc(&p, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    size_t freeBytes = 0, totalBytes = 0;
    cudaMemGetInfo(&freeBytes, &totalBytes);
    throw Error("out of GPU memory on device " + std::to_string(deviceIndex_) + ": asked for " +
                std::to_string(bytes >> 20) + " MiB with " + std::to_string(freeBytes >> 20) + " MiB of " +
                std::to_string(totalBytes >> 20) + " MiB free; lower the KV cache size or batch, or use a larger GPU");
  }
  return p;
}

void CudaBackend::release(void* ptr) {
  if (ptr == nullptr) return;
  ++epoch_;
  if (capturing_) abortCapture();  // release runs in destructors (no throw): end the capture, free normally
  if (streamOrdered_ && stream_ != nullptr) {
    // After the stream's work that may still read it, with no wait on the host or on any
    // other stream (cudaFree would wait for the whole device: with several engines in one
    // process, for another rank's exchange wait that waits for this thread).
    cudaFreeAsync(ptr, stream_);
    return;
  }
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  cudaFree(ptr);
}

void CudaBackend::copyToDevice(void* dst, const void* src, size_t bytes) {
  refuseWhileCapturing("a host-to-device copy");
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host buffer may be reused at once
}

void CudaBackend::copyToHost(void* dst, const void* src, size_t bytes) {
  refuseWhileCapturing("a device-to-host copy");
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copyDevice(void* dst, const void* src, size_t bytes) {
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

}  // namespace afd::cuda
