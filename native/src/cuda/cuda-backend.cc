#include "cuda/cuda-backend.h"

#include <cuda_profiler_api.h>

#include "cuda/cuda-check.h"
#include "cuda/ipc/ipc-region.h"

namespace afd::cuda {

CudaBackend::CudaBackend(int deviceIndex, const CudaOptions& options)
    : ctx_(deviceIndex, options),
      memory_(ctx_),
      rows_(ctx_, memory_),
      sampling_(ctx_, memory_),
      attention_(ctx_, memory_),
      linear_(ctx_, memory_),
      moe_(ctx_, memory_, linear_),
      deepseek_(ctx_, memory_),
      linearAttention_(ctx_) {}

// The op families free their buffers (and the cuBLAS handle) once the stream's work is
// done; the stream goes last (StreamContext's destructor).
CudaBackend::~CudaBackend() {
  if (ctx_.stream() != nullptr) cudaStreamSynchronize(ctx_.stream());
}

// The calling thread (a worker of the binding) may not have made this backend's device
// current: the region must live on, and be mapped into, the device of this backend.
std::unique_ptr<SharedRegion> CudaBackend::allocateShared(size_t bytes, const std::string& /*dir*/) {
  AFD_CUDA_CHECK(cudaSetDevice(ctx_.deviceIndex()));
  return createIpcRegion(bytes);
}

void CudaBackend::profilerRange(bool start) {
  ctx_.synchronize();  // the range holds whole the work queued after it starts, none before
  AFD_CUDA_CHECK(start ? cudaProfilerStart() : cudaProfilerStop());
}

// A stream per call, so concurrent callers (binding workers) wait only for their own copies;
// creating one costs microseconds against copies of megabytes.
void CudaBackend::copyDeviceBeside(const std::vector<DeviceCopy>& copies) {
  AFD_CUDA_CHECK(cudaSetDevice(ctx_.deviceIndex()));
  cudaStream_t stream = nullptr;
  AFD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaError_t err = cudaSuccess;
  for (const DeviceCopy& c : copies) {
    err = cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDeviceToDevice, stream);
    if (err != cudaSuccess) break;
  }
  const cudaError_t waited = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  AFD_CUDA_CHECK(err);
  AFD_CUDA_CHECK(waited);
}

std::unique_ptr<SharedRegion> CudaBackend::openShared(const std::vector<uint8_t>& handle, size_t bytes) {
  AFD_CUDA_CHECK(cudaSetDevice(ctx_.deviceIndex()));
  return openIpcRegion(handle, bytes);
}

}  // namespace afd::cuda
