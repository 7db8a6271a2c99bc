#include "cuda/rope.cuh"

#include <stdexcept>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"
#include "cuda/dtype-load.cuh"

namespace afd::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kMaxHeadDim = 512;

// One block per (row, group of 8 heads): cos/sin once into shared memory (angle in f32 like HF, cos/sin in
// f64 like the CPU backend), then one warp per head.
__global__ void __launch_bounds__(kWarps * 32) qkNormRopeKernel(QkNormRopeArgs a) {
  pdlWait();
  __shared__ float head[kWarps][kMaxHeadDim];
  __shared__ float cosv[kMaxHeadDim / 2];
  __shared__ float sinv[kMaxHeadDim / 2];
  const int row = blockIdx.x;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int D = a.headDim;
  const int rotary = a.rotaryDim > 0 ? a.rotaryDim : D;
  const int half = rotary / 2;
  const float pos = static_cast<float>(a.positions[row]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float angle = pos * a.invFreq[i];
    cosv[i] = static_cast<float>(cos(static_cast<double>(angle))) * a.attentionScale;
    sinv[i] = static_cast<float>(sin(static_cast<double>(angle))) * a.attentionScale;
  }
  __syncthreads();
  const int slot = a.slotMapping != nullptr ? a.slotMapping[row] : -1;
  const bool writeCache = slot >= 0 && a.kCache != nullptr;
  const int numRotated = a.numHeads + a.numKvHeads;
  const int numTasks = numRotated + (writeCache && a.vIn != nullptr ? a.numKvHeads : 0);
  float* h = head[warp];
  for (int task = blockIdx.y * kWarps + warp; task < numTasks; task += kWarps * gridDim.y) {
    if (task >= numRotated) {  // v head: copy into the cache
      const int kvh = task - numRotated;
      const float* src = a.vIn + row * a.vRowStride + static_cast<int64_t>(kvh) * D;
      const size_t base = (static_cast<size_t>(slot) * a.numKvHeads + kvh) * D;
      for (int i = lane; i < D; i += 32) storeFromFloat(a.vCache, a.cacheDtype, base + i, src[i]);
      continue;
    }
    const bool isQ = task < a.numHeads;
    const int hd = isQ ? task : task - a.numHeads;
    const float* src = isQ ? a.qIn + row * a.qRowStride + static_cast<int64_t>(hd) * D
                           : a.kIn + row * a.kRowStride + static_cast<int64_t>(hd) * D;
    float sumSquares = 0.0f;
    for (int i = lane; i < D; i += 32) {
      const float v = src[i];
      h[i] = v;
      sumSquares += v * v;
    }
    const void* norm = isQ ? a.qNorm : a.kNorm;
    const float scale = norm != nullptr ? rsqrtf(warpSum(sumSquares) / static_cast<float>(D) + a.eps) : 1.0f;
    __syncwarp();
    float* dst = isQ ? a.qOut + (static_cast<size_t>(row) * a.numHeads + hd) * D
                     : (a.kOut != nullptr ? a.kOut + (static_cast<size_t>(row) * a.numKvHeads + hd) * D : nullptr);
    const size_t cacheBase = (static_cast<size_t>(slot) * a.numKvHeads + hd) * D;
    for (int i = lane; i < half; i += 32) {
      float x1 = h[i];
      float x2 = h[i + half];
      if (norm != nullptr) {
        x1 = loadAsFloat(norm, a.normDtype, i) * (x1 * scale);
        x2 = loadAsFloat(norm, a.normDtype, i + half) * (x2 * scale);
      }
      const float y1 = x1 * cosv[i] - x2 * sinv[i];
      const float y2 = x2 * cosv[i] + x1 * sinv[i];
      if (dst != nullptr) {
        dst[i] = y1;
        dst[i + half] = y2;
      }
      if (!isQ && writeCache) {
        storeFromFloat(a.kCache, a.cacheDtype, cacheBase + i, y1);
        storeFromFloat(a.kCache, a.cacheDtype, cacheBase + i + half, y2);
      }
    }
    // Partial RoPE: the dims past the rotated ones are only normed.
    for (int i = rotary + lane; i < D; i += 32) {
      const float x = norm != nullptr ? loadAsFloat(norm, a.normDtype, i) * (h[i] * scale) : h[i];
      if (dst != nullptr) dst[i] = x;
      if (!isQ && writeCache) storeFromFloat(a.kCache, a.cacheDtype, cacheBase + i, x);
    }
    __syncwarp();
  }
}

__global__ void writeKvCacheKernel(const float* k, const float* v, const int32_t* slotMapping, void* kCache,
                                   void* vCache, int cacheDtype, int rowElems) {
  pdlWait();
  const int row = blockIdx.x;
  const int slot = slotMapping[row];
  if (slot < 0) return;
  for (int i = threadIdx.x; i < rowElems; i += blockDim.x) {
    storeFromFloat(kCache, cacheDtype, static_cast<size_t>(slot) * rowElems + i, k[static_cast<size_t>(row) * rowElems + i]);
    storeFromFloat(vCache, cacheDtype, static_cast<size_t>(slot) * rowElems + i, v[static_cast<size_t>(row) * rowElems + i]);
  }
}

}  // namespace

void qkNormRope(const QkNormRopeArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  if (a.headDim <= 0 || a.headDim % 2 != 0 || a.headDim > kMaxHeadDim) {
    throw std::invalid_argument("qkNormRope: headDim must be even and <= 512, got " + std::to_string(a.headDim));
  }
  if (a.rotaryDim < 0 || a.rotaryDim % 2 != 0 || a.rotaryDim > a.headDim) {
    throw std::invalid_argument("qkNormRope: rotaryDim must be even and <= headDim, got " + std::to_string(a.rotaryDim));
  }
  if (a.numHeads <= 0 || a.numKvHeads <= 0 || a.invFreq == nullptr || a.positions == nullptr) {
    throw std::invalid_argument("qkNormRope: numHeads/numKvHeads must be positive and invFreq/positions given");
  }
  // Heads spread over blocks too, so a decode row's heads run in parallel.
  const int maxTasks = a.numHeads + 2 * a.numKvHeads;
  AFD_CUDA_CHECK(launchKernel(qkNormRopeKernel, dim3(a.rows, (maxTasks + kWarps - 1) / kWarps), kWarps * 32, 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("qkNormRopeKernel");
}

void writeKvCache(const float* k, const float* v, const int32_t* slotMapping, void* kCache, void* vCache,
                  int cacheDtype, int rows, int numKvHeads, int headDim, cudaStream_t stream) {
  if (rows == 0) return;
  AFD_CUDA_CHECK(launchKernel(writeKvCacheKernel, rows, 256, 0, stream, k, v, slotMapping, kCache, vCache, cacheDtype, numKvHeads * headDim));
  AFD_CUDA_CHECK_LAUNCH("writeKvCacheKernel");
}

}  // namespace afd::cuda
