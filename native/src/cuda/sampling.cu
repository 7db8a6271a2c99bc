#include "cuda/sampling.cuh"

#include <stdexcept>

#include "core/sampling-rng.h"
#include "cuda/bf16-vec.cuh"
#include "cuda/block-best.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 1024;

__device__ __forceinline__ uint32_t orderedKey(float x) {
  const uint32_t u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Exclusive prefix sum over the block (thread order); every thread gets its prefix.
__device__ float blockExclusiveScan(float v, float* warpTotals) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  float inclusive = v;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float n = __shfl_up_sync(0xffffffffu, inclusive, off);
    if (lane >= off) inclusive += n;
  }
  if (lane == 31) warpTotals[warp] = inclusive;
  __syncthreads();
  float before = 0.0f;
  for (int w = 0; w < warp; ++w) before += warpTotals[w];
  __syncthreads();
  return before + inclusive - v;
}

__global__ void __launch_bounds__(kThreads) sampleKernel(SamplingArgs a) {
  pdlWait();
  __shared__ Best bestScratch[32];
  __shared__ float floatScratch[32];
  __shared__ unsigned int histCount[256];
  __shared__ float histMass[256];
  __shared__ uint32_t sharedPrefix;
  __shared__ uint32_t sharedRemaining;
  __shared__ float sharedAbove;
  __shared__ int chosen;
  __shared__ int lastKept;
  const int row = blockIdx.x;
  const int V = a.vocab;
  const float* logits = a.logits + static_cast<size_t>(row) * V;
  const int tid = threadIdx.x;

  Best mine{-INFINITY, 0x7fffffff};
  for (int i = tid; i < V; i += blockDim.x) mine = better(mine, Best{logits[i], i});
  const Best top = blockArgmax(mine, bestScratch);
  const float temperature = a.temperature[row];
  if (!(temperature > 0.0f)) {
    if (tid == 0) a.tokens[row] = top.id == 0x7fffffff ? 0 : top.id;
    return;
  }
  const float maxLogit = top.value;
  const float invT = 1.0f / temperature;

  // Top-k threshold: the k-th largest key, by 4 radix passes of 8 bits.
  uint32_t keyFloor = 0;
  const int topK = a.topK[row];
  if (topK > 0 && topK < V) {
    uint32_t prefix = 0;
    uint32_t mask = 0;
    if (tid == 0) sharedRemaining = static_cast<uint32_t>(topK);
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int d = tid; d < 256; d += blockDim.x) histCount[d] = 0;
      __syncthreads();
      for (int i = tid; i < V; i += blockDim.x) {
        const uint32_t key = orderedKey(logits[i]);
        if ((key & mask) == prefix) atomicAdd(&histCount[(key >> shift) & 255u], 1u);
      }
      __syncthreads();
      if (tid == 0) {
        uint32_t cum = 0;
        int digit = 0;
        for (int d = 255; d >= 0; --d) {
          if (cum + histCount[d] >= sharedRemaining) {
            digit = d;
            break;
          }
          cum += histCount[d];
        }
        sharedRemaining -= cum;
        sharedPrefix = prefix | (static_cast<uint32_t>(digit) << shift);
      }
      __syncthreads();
      prefix = sharedPrefix;
      mask |= 255u << shift;
    }
    keyFloor = prefix;
  }

  // Top-p threshold: the largest key whose kept mass at or above it reaches topP times
  // the mass of the whole vocabulary.
  const float topP = a.topP[row];
  if (topP < 1.0f) {
    float allMass = 0.0f;
    for (int i = tid; i < V; i += blockDim.x) allMass += expf((logits[i] - maxLogit) * invT);
    allMass = blockSum(allMass, floatScratch);
    const float target = topP * allMass;
    uint32_t prefix = 0;
    uint32_t mask = 0;
    if (tid == 0) sharedAbove = 0.0f;
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int d = tid; d < 256; d += blockDim.x) histMass[d] = 0.0f;
      __syncthreads();
      for (int i = tid; i < V; i += blockDim.x) {
        const float l = logits[i];
        const uint32_t key = orderedKey(l);
        if (key >= keyFloor && (key & mask) == prefix) atomicAdd(&histMass[(key >> shift) & 255u], expf((l - maxLogit) * invT));
      }
      __syncthreads();
      if (tid == 0) {
        float cum = sharedAbove;
        int digit = -1;
        int lowest = 0;
        for (int d = 255; d >= 0; --d) {
          if (histMass[d] > 0.0f) lowest = d;
          if (histMass[d] > 0.0f && cum + histMass[d] >= target) {
            digit = d;
            break;
          }
          cum += histMass[d];
        }
        if (digit < 0) {  // rounding: take everything left
          digit = lowest;
          cum -= histMass[lowest];
        }
        sharedAbove = cum;
        sharedPrefix = prefix | (static_cast<uint32_t>(digit) << shift);
      }
      __syncthreads();
      prefix = sharedPrefix;
      mask |= 255u << shift;
    }
    keyFloor = max(keyFloor, prefix);
  }

  // Min-p: a token stays when exp((l - max) / T) = p / pmax >= minP (the arg-max always
  // does); a token of p 0 (a banned one, logit -inf) never does.
  const float minP = a.minP[row];

  // Inverse CDF in ascending id order: thread t owns ids [t * chunk, (t + 1) * chunk).
  const int chunk = (V + blockDim.x - 1) / blockDim.x;
  const int begin = min(V, tid * chunk);
  const int end = min(V, begin + chunk);
  float own = 0.0f;
  int ownLast = -1;
  for (int i = begin; i < end; ++i) {
    const float l = logits[i];
    const float e = expf((l - maxLogit) * invT);
    if (orderedKey(l) >= keyFloor && e > 0.0f && e >= minP) {
      own += e;
      ownLast = i;
    }
  }
  if (tid == 0) {
    chosen = 0x7fffffff;
    lastKept = -1;
  }
  const float before = blockExclusiveScan(own, floatScratch);
  const float total = blockSum(own, floatScratch);
  if (ownLast >= 0) atomicMax(&lastKept, ownLast);
  const float target = afd::samplingUniform(a.seed[row], a.position[row]) * total;
  if (own > 0.0f && before <= target && target < before + own) {
    float running = before;
    for (int i = begin; i < end; ++i) {
      const float l = logits[i];
      const float e = expf((l - maxLogit) * invT);
      if (orderedKey(l) >= keyFloor && e > 0.0f && e >= minP) {
        running += e;
        if (running > target) {
          atomicMin(&chosen, i);
          break;
        }
      }
    }
  }
  __syncthreads();
  if (tid == 0) a.tokens[row] = chosen != 0x7fffffff ? chosen : (lastKept >= 0 ? lastKept : top.id);
}

}  // namespace

void sampleTokens(const SamplingArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  if (a.vocab <= 0) throw std::invalid_argument("sampleTokens: vocab must be positive");
  AFD_CUDA_CHECK(launchKernel(sampleKernel, a.rows, kThreads, 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("sampleKernel");
}

}  // namespace afd::cuda

namespace afd::cuda {
namespace {
__global__ void uniformsKernel(const uint32_t* seeds, const int32_t* positions, float* out, int n) {
  pdlWait();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = afd::samplingUniform(seeds[i], positions[i]);
}
}  // namespace

void samplingUniforms(const uint32_t* seeds, const int32_t* positions, float* out, int n, cudaStream_t stream) {
  if (n == 0) return;
  AFD_CUDA_CHECK(launchKernel(uniformsKernel, (n + 255) / 256, 256, 0, stream, seeds, positions, out, n));
  AFD_CUDA_CHECK_LAUNCH("uniformsKernel");
}
}  // namespace afd::cuda
