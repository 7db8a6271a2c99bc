#include "cuda/gather-rows.cuh"

#include <stdexcept>
#include <string>

#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void gatherRowsKernel(const T* x, const int32_t* rows, T* out, int width) {
  pdlWait();
  const T* src = x + static_cast<size_t>(rows[blockIdx.x]) * width;
  T* dst = out + static_cast<size_t>(blockIdx.x) * width;
  for (int i = threadIdx.x; i < width; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void gatherRows(const void* x, const int32_t* rows, void* out, int numRows, int width, int elemBytes,
                cudaStream_t stream) {
  if (numRows == 0) return;
  if (elemBytes == 4) {
    AFD_CUDA_CHECK(launchKernel(gatherRowsKernel<float>, numRows, kThreads, 0, stream, static_cast<const float*>(x), rows,
                                static_cast<float*>(out), width));
  } else if (elemBytes == 2) {
    AFD_CUDA_CHECK(launchKernel(gatherRowsKernel<uint16_t>, numRows, kThreads, 0, stream, static_cast<const uint16_t*>(x),
                                rows, static_cast<uint16_t*>(out), width));
  } else {
    throw std::invalid_argument("gatherRows: elements of " + std::to_string(elemBytes) + " bytes (supported: 2, 4)");
  }
  AFD_CUDA_CHECK_LAUNCH("gatherRowsKernel");
}

}  // namespace afd::cuda
