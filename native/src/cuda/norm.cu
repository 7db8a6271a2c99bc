#include "cuda/norm.cuh"

#include <stdexcept>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

// One block per row.
__global__ void addRmsNormKernel(float* residual, const void* delta, bool deltaIsBf16, const void* weight,
                                 int weightDtype, void* out, bool outIsBf16, int hidden, float eps) {
  pdlWait();
  __shared__ float scratch[32];
  const size_t base = static_cast<size_t>(blockIdx.x) * hidden;
  float* res = residual + base;
  float sumSquares = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v = res[i];
    if (delta != nullptr) {
      v += deltaIsBf16 ? __bfloat162float(static_cast<const bf16*>(delta)[base + i]) : static_cast<const float*>(delta)[base + i];
      res[i] = v;
    }
    sumSquares += v * v;
  }
  const float total = blockSum(sumSquares, scratch);
  const float scale = rsqrtf(total / static_cast<float>(hidden) + eps);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float v = loadAsFloat(weight, weightDtype, i) * (res[i] * scale);
    if (outIsBf16) {
      static_cast<bf16*>(out)[base + i] = __float2bfloat16(v);
    } else {
      static_cast<float*>(out)[base + i] = v;
    }
  }
}

}  // namespace

void addRmsNorm(float* residual, const void* delta, bool deltaIsBf16, const void* weight, int weightDtype, void* out,
                bool outIsBf16, int rows, int hidden, float eps, cudaStream_t stream) {
  if (rows == 0) return;
  if (hidden <= 0) throw std::invalid_argument("addRmsNorm: hidden must be positive");
  AFD_CUDA_CHECK(launchKernel(addRmsNormKernel, rows, 1024, 0, stream, residual, delta, deltaIsBf16, weight, weightDtype,
                              out, outIsBf16, hidden, eps));
  AFD_CUDA_CHECK_LAUNCH("addRmsNormKernel");
}

}  // namespace afd::cuda
