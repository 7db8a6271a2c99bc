#include "cuda/mla-prologue.cuh"

#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;

// One block per token: the latent norm, then every rope pair of the token (its q heads
// and the latent row's rope key), one pair per thread at a time.
__global__ void __launch_bounds__(kThreads) mlaNormRopeKernel(MlaNormRopeArgs a) {
  pdlWait();
  __shared__ float cosv[kMlaMaxRopeDim / 2];
  __shared__ float sinv[kMlaMaxRopeDim / 2];
  __shared__ float reduce[32];
  const int row = blockIdx.x;
  const int L = a.latent;
  const int half = a.rope / 2;
  const int width = L + a.rope;
  const int qHeadDim = a.nope + a.rope;
  float* kv = a.kvA + static_cast<size_t>(row) * width;
  const float pos = static_cast<float>(a.positions[row]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float angle = pos * a.invFreq[i];
    cosv[i] = static_cast<float>(cos(static_cast<double>(angle))) * a.attentionScale;
    sinv[i] = static_cast<float>(sin(static_cast<double>(angle))) * a.attentionScale;
  }
  float sumSquares = 0.0f;
  for (int i = threadIdx.x; i < L; i += blockDim.x) sumSquares += kv[i] * kv[i];
  // blockSum synchronizes the block, so cos / sin are visible after it too.
  const float total = blockSum(sumSquares, reduce);
  const float inv = static_cast<float>(1.0 / sqrt(static_cast<double>(total) / static_cast<double>(L) + static_cast<double>(a.eps)));
  for (int i = threadIdx.x; i < L; i += blockDim.x) kv[i] = loadAsFloat(a.kvNorm, a.normDtype, i) * (kv[i] * inv);
  const int pairs = (a.heads + 1) * half;
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int r = p / half;
    const int i = p - r * half;
    float* x = r < a.heads ? a.q + (static_cast<size_t>(row) * a.heads + r) * qHeadDim + a.nope : kv + L;
    const int i1 = a.interleaved ? 2 * i : i;
    const int i2 = a.interleaved ? 2 * i + 1 : i + half;
    const float x1 = x[i1];
    const float x2 = x[i2];
    x[i1] = x1 * cosv[i] - x2 * sinv[i];
    x[i2] = x2 * cosv[i] + x1 * sinv[i];
  }
}

__global__ void writeLatentCacheKernel(const float* kvA, const int32_t* slotMapping, void* cache, int cacheDtype, int width,
                                       int64_t numSlots) {
  pdlWait();
  const int row = blockIdx.x;
  const int slot = slotMapping[row];
  if (slot < 0 || slot >= numSlots) return;
  const float* src = kvA + static_cast<size_t>(row) * width;
  for (int i = threadIdx.x; i < width; i += blockDim.x)
    storeFromFloat(cache, cacheDtype, static_cast<size_t>(slot) * width + i, src[i]);
}

}  // namespace

void mlaNormRope(const MlaNormRopeArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  if (a.rope <= 0 || a.rope % 2 != 0 || a.rope > kMlaMaxRopeDim) {
    throw std::invalid_argument("mlaNormRope on CUDA: rope dim must be even and in [2, " + std::to_string(kMlaMaxRopeDim) +
                                "], got " + std::to_string(a.rope));
  }
  if (a.latent <= 0 || a.heads <= 0 || a.nope < 0) {
    throw std::invalid_argument("mlaNormRope on CUDA: latent and heads must be positive and nope non-negative");
  }
  if (a.q == nullptr || a.kvA == nullptr || a.kvNorm == nullptr || a.positions == nullptr || a.invFreq == nullptr) {
    throw std::invalid_argument("mlaNormRope on CUDA: q, kvA, kvNorm, positions and invFreq must be given");
  }
  AFD_CUDA_CHECK(launchKernel(mlaNormRopeKernel, dim3(a.rows), dim3(kThreads), 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("mlaNormRopeKernel");
}

void writeLatentCache(const float* kvA, const int32_t* slotMapping, void* cache, int cacheDtype, int rows, int width,
                      int64_t numSlots, cudaStream_t stream) {
  if (rows == 0) return;
  if (width <= 0) throw std::invalid_argument("writeLatentCache on CUDA: the latent row width must be positive");
  AFD_CUDA_CHECK(launchKernel(writeLatentCacheKernel, dim3(rows), dim3(kThreads), 0, stream, kvA, slotMapping, cache, cacheDtype,
                              width, numSlots));
  AFD_CUDA_CHECK_LAUNCH("writeLatentCacheKernel");
}

}  // namespace afd::cuda
