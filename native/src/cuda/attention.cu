#include "cuda/attention.cuh"

#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/attention-split.cuh"
#include "cuda/attention-tc.cuh"
#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"
#include "cuda/dtype-load.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kTile = 128;     // keys per online-softmax tile
constexpr int kMaxGroup = 8;   // q heads per kv head

__device__ __forceinline__ void loadKv8(const bf16* p, float out[8]) {
  bf16x8ToFloat(__ldg(reinterpret_cast<const uint4*>(p)), out);
}
__device__ __forceinline__ void loadKv8(const __half* p, float out[8]) {
  union {
    uint4 raw;
    __half2 h[4];
  } v;
  v.raw = __ldg(reinterpret_cast<const uint4*>(p));
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(v.h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void loadKv8(const float* p, float out[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p));
  const float4 b = __ldg(reinterpret_cast<const float4*>(p + 4));
  out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
  out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
}

// Block: one (query, kv head, split). Scores: D/32 threads per key, 32 dims each (16-byte
// loads); P.V: D/8 threads per key row (16 bytes each), kThreads/(D/8) keys in parallel.
template <int D, typename CacheT>
__global__ void __launch_bounds__(kThreads, 4) pagedAttentionKernel(PagedAttentionArgs a) {
  pdlWait();
  constexpr int kTpt = D / 32;
  constexpr int kPass = kThreads / kTpt;
  constexpr int kChunks = D / 8;
  constexpr int kLanes = kThreads / kChunks;
  __shared__ __align__(16) float qs[kMaxGroup][D];
  __shared__ float scores[kMaxGroup][kTile];
  __shared__ float reduce[kLanes][kMaxGroup][D];
  __shared__ float mRun[kMaxGroup];
  __shared__ float lRun[kMaxGroup];
  __shared__ float alpha[kMaxGroup];

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int query = blockIdx.x;
  const int kvh = blockIdx.y;
  const int split = blockIdx.z;
  const int G = a.numHeads / a.numKvHeads;
  const int seq = a.querySeq != nullptr ? a.querySeq[query] : query;
  const int ctx = a.positions[query] + 1;
  const CacheT* kCache = static_cast<const CacheT*>(a.kCache);
  const CacheT* vCache = static_cast<const CacheT*>(a.vCache);
  const int splitLen = (ctx + a.numSplits - 1) / a.numSplits;
  const int s0 = min(ctx, split * splitLen);
  const int s1 = min(ctx, s0 + splitLen);
  const int32_t* table = a.blockTables + static_cast<size_t>(seq) * a.maxBlocksPerSeq;
  const size_t headBase = static_cast<size_t>(query) * a.numHeads + static_cast<size_t>(kvh) * G;

  for (int i = tid; i < G * D; i += kThreads) qs[i / D][i % D] = a.q[headBase * D + i];
  if (tid < kMaxGroup) {
    mRun[tid] = -INFINITY;
    lRun[tid] = 0.0f;
  }
  float acc[kMaxGroup][8];
#pragma unroll
  for (int h = 0; h < kMaxGroup; ++h)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[h][e] = 0.0f;
  const int part = tid % kTpt;
  const int keyInPass = tid / kTpt;
  const int chunk = tid % kChunks;
  const int keyLane = tid / kChunks;
  __syncthreads();

  for (int ts = s0; ts < s1; ts += kTile) {
    const int tileLen = min(kTile, s1 - ts);
    for (int base = 0; base < kTile; base += kPass) {
      const int i = base + keyInPass;
      const bool live = i < tileLen;
      float s[kMaxGroup];
#pragma unroll
      for (int h = 0; h < kMaxGroup; ++h) s[h] = 0.0f;
      if (live) {
        const int key = ts + i;
        const int block = table[key / a.blockSize];
        const CacheT* kRow =
            kCache + ((static_cast<size_t>(block) * a.blockSize + key % a.blockSize) * a.numKvHeads + kvh) * D;
        float kvAll[4][8];
#pragma unroll
        for (int j = 0; j < 4; ++j) loadKv8(kRow + (part + kTpt * j) * 8, kvAll[j]);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float* kv = kvAll[j];
          const int d0 = (part + kTpt * j) * 8;
#pragma unroll
          for (int h = 0; h < kMaxGroup; ++h) {
            if (h < G) {
              const float4 q0 = *reinterpret_cast<const float4*>(&qs[h][d0]);
              const float4 q1 = *reinterpret_cast<const float4*>(&qs[h][d0 + 4]);
              s[h] += q0.x * kv[0] + q0.y * kv[1] + q0.z * kv[2] + q0.w * kv[3] + q1.x * kv[4] + q1.y * kv[5] +
                      q1.z * kv[6] + q1.w * kv[7];
            }
          }
        }
      }
#pragma unroll
      for (int h = 0; h < kMaxGroup; ++h)
#pragma unroll
        for (int off = kTpt / 2; off > 0; off >>= 1) s[h] += __shfl_xor_sync(0xffffffffu, s[h], off);
      if (part == 0) {
        for (int h = 0; h < G; ++h) scores[h][i] = live ? s[h] * a.scale : -INFINITY;
      }
    }
    __syncthreads();
    for (int h = warp; h < G; h += kThreads / 32) {
      float mx = -INFINITY;
      for (int i = lane; i < kTile; i += 32) mx = fmaxf(mx, scores[h][i]);
      mx = warpMax(mx);
      const float mOld = mRun[h];
      const float mNew = fmaxf(mOld, mx);
      float sum = 0.0f;
      for (int i = lane; i < kTile; i += 32) {
        const float e = i < tileLen ? __expf(scores[h][i] - mNew) : 0.0f;
        scores[h][i] = e;
        sum += e;
      }
      sum = warpSum(sum);
      if (lane == 0) {
        const float scaleOld = mOld == -INFINITY ? 0.0f : __expf(mOld - mNew);
        alpha[h] = scaleOld;
        lRun[h] = lRun[h] * scaleOld + sum;
        mRun[h] = mNew;
      }
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < kMaxGroup; ++h) {
      if (h < G) {
        const float al = alpha[h];
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[h][e] *= al;
      }
    }
    // Four V rows in flight per thread (the loop is load-latency bound).
    for (int i0 = keyLane; i0 < tileLen; i0 += 4 * kLanes) {
      float v[4][8];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = i0 + u * kLanes;
        if (i < tileLen) {
          const int key = ts + i;
          const int block = table[key / a.blockSize];
          const CacheT* vRow =
              vCache + ((static_cast<size_t>(block) * a.blockSize + key % a.blockSize) * a.numKvHeads + kvh) * D;
          loadKv8(vRow + chunk * 8, v[u]);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) v[u][e] = 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = min(i0 + u * kLanes, kTile - 1);  // rows past tileLen have v = 0
#pragma unroll
        for (int h = 0; h < kMaxGroup; ++h) {
          if (h < G) {
            const float p = scores[h][i];
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[h][e] += p * v[u][e];
          }
        }
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int h = 0; h < kMaxGroup; ++h)
    if (h < G)
#pragma unroll
      for (int e = 0; e < 8; ++e) reduce[keyLane][h][chunk * 8 + e] = acc[h][e];
  __syncthreads();
  const size_t pairIndex = static_cast<size_t>(query) * a.numKvHeads + kvh;
  float* partialOut = splitPartial(a, pairIndex, split, G, D);
  float* stats = splitStats(a, pairIndex, split, G, D);
  for (int o = tid; o < G * D; o += kThreads) {
    float sum = 0.0f;
#pragma unroll
    for (int l = 0; l < kLanes; ++l) sum += reduce[l][o / D][o % D];
    if (a.numSplits == 1) {
      const float l = lRun[o / D];
      a.out[headBase * D + o] = l > 0.0f ? sum / l : 0.0f;
    } else {
      partialOut[o] = sum;
    }
  }
  if (a.numSplits == 1) return;
  if (tid < G) {
    stats[tid] = mRun[tid];
    stats[G + tid] = lRun[tid];
  }
  combineSplitsIfLast<kMaxGroup, kThreads>(a, pairIndex, a.numSplits, G, D, headBase);
}

// Any head dim (<= 512), one block per (query, q head), no split: the exact fallback
// for shapes the tiled kernel does not cover (tiny test models).
__global__ void __launch_bounds__(kThreads) pagedAttentionGenericKernel(PagedAttentionArgs a) {
  pdlWait();
  constexpr int kMaxDim = 512;
  __shared__ float qs[kMaxDim];
  __shared__ float acc[kMaxDim];
  __shared__ float p[kTile];
  __shared__ float scratch[32];
  __shared__ float mRun, lRun, alpha;
  const int query = blockIdx.x;
  const int head = blockIdx.y;
  const int D = a.headDim;
  const int kvh = head / (a.numHeads / a.numKvHeads);
  const int seq = a.querySeq != nullptr ? a.querySeq[query] : query;
  const int ctx = a.positions[query] + 1;
  const int32_t* table = a.blockTables + static_cast<size_t>(seq) * a.maxBlocksPerSeq;
  const size_t qBase = (static_cast<size_t>(query) * a.numHeads + head) * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    qs[d] = a.q[qBase + d];
    acc[d] = 0.0f;
  }
  if (threadIdx.x == 0) {
    mRun = -INFINITY;
    lRun = 0.0f;
  }
  __syncthreads();
  for (int ts = 0; ts < ctx; ts += kTile) {
    const int tileLen = min(kTile, ctx - ts);
    float s = -INFINITY;
    if (threadIdx.x < tileLen) {
      const int key = ts + threadIdx.x;
      const size_t row = ((static_cast<size_t>(table[key / a.blockSize]) * a.blockSize + key % a.blockSize) * a.numKvHeads + kvh) * D;
      float dot = 0.0f;
      for (int d = 0; d < D; ++d) dot += qs[d] * loadAsFloat(a.kCache, a.cacheDtype, row + d);
      s = dot * a.scale;
    }
    const float mx = blockMax(s, scratch);
    const float mNew = fmaxf(mRun, mx);
    const float e = threadIdx.x < tileLen ? __expf(s - mNew) : 0.0f;
    p[threadIdx.x] = e;
    const float sum = blockSum(e, scratch);
    if (threadIdx.x == 0) {
      alpha = mRun == -INFINITY ? 0.0f : __expf(mRun - mNew);
      lRun = lRun * alpha + sum;
      mRun = mNew;
    }
    __syncthreads();
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
      float v = acc[d] * alpha;
      for (int i = 0; i < tileLen; ++i) {
        const int key = ts + i;
        const size_t row = ((static_cast<size_t>(table[key / a.blockSize]) * a.blockSize + key % a.blockSize) * a.numKvHeads + kvh) * D;
        v += p[i] * loadAsFloat(a.vCache, a.cacheDtype, row + d);
      }
      acc[d] = v;
    }
    __syncthreads();
  }
  for (int d = threadIdx.x; d < D; d += blockDim.x) a.out[qBase + d] = lRun > 0.0f ? acc[d] / lRun : 0.0f;
}

template <typename CacheT>
void launchForDim(const PagedAttentionArgs& a, cudaStream_t stream) {
  const dim3 grid(a.numQueries, a.numKvHeads, a.numSplits);
  const bool groupFits = a.numHeads / a.numKvHeads <= kMaxGroup;
  switch (groupFits ? a.headDim : 0) {
    case 64: AFD_CUDA_CHECK(launchKernel(pagedAttentionKernel<64, CacheT>, grid, kThreads, 0, stream, a)); break;
    case 128: AFD_CUDA_CHECK(launchKernel(pagedAttentionKernel<128, CacheT>, grid, kThreads, 0, stream, a)); break;
    case 256: AFD_CUDA_CHECK(launchKernel(pagedAttentionKernel<256, CacheT>, grid, kThreads, 0, stream, a)); break;
    default: {
      if (a.headDim > 512 || a.headDim <= 0) {
        throw std::invalid_argument("pagedAttention: headDim must be in 1..512, got " + std::to_string(a.headDim));
      }
      AFD_CUDA_CHECK(launchKernel(pagedAttentionGenericKernel, dim3(a.numQueries, a.numHeads), kThreads, 0, stream, a));
    }
  }
}

}  // namespace

int attentionSplits(int numQueries, int numKvHeads, int numMultiprocessors, int blocksPerSm) {
  const int work = std::max(1, numQueries * numKvHeads);
  const int target = std::max(1, blocksPerSm) * std::max(1, numMultiprocessors);
  return std::clamp((target + work - 1) / work, 1, kMaxAttentionSplits);
}

size_t attentionWorkspaceBytes(int numQueries, int numHeads, int headDim, int numSplits) {
  // partial outputs [queries, heads, splits, headDim] + (m, l) per [queries, heads, splits]
  return sizeof(float) * static_cast<size_t>(numQueries) * numHeads * numSplits * (headDim + 2);
}

AttentionKernel resolveAttentionKernel(const PagedAttentionArgs& a, AttentionKernel preference) {
  const bool tcFits = tensorCoreAttentionFits(a);
  if (a.kernel == AttentionKernel::TensorCore) {
    if (!tcFits) {
      throw std::invalid_argument("pagedAttention: the tensor-core kernel needs a bf16 cache, headDim 64/128/256 and at most " +
                                  std::to_string(kTensorCoreMaxGroup) + " q heads per kv head (got dtype code " +
                                  std::to_string(a.cacheDtype) + ", headDim " + std::to_string(a.headDim) + ", " +
                                  std::to_string(a.numHeads) + "/" + std::to_string(a.numKvHeads) +
                                  " heads); use AttentionKernel::Simt or Auto");
    }
    return AttentionKernel::TensorCore;
  }
  if (a.kernel == AttentionKernel::Simt || !tcFits) return AttentionKernel::Simt;
  switch (preference) {
    case AttentionKernel::Simt: return AttentionKernel::Simt;
    case AttentionKernel::TensorCore: return AttentionKernel::TensorCore;
    default: break;
  }
  const bool useTc = a.maxQueryLen > 1 || a.numQueries >= kTensorCoreMinDecodeQueries;
  return useTc ? AttentionKernel::TensorCore : AttentionKernel::Simt;
}

void pagedAttention(const PagedAttentionArgs& a, cudaStream_t stream) {
  if (a.numQueries == 0) return;
  if (a.numKvHeads <= 0 || a.numHeads <= 0 || a.numHeads % a.numKvHeads != 0) {
    throw std::invalid_argument("pagedAttention: numHeads must be a positive multiple of numKvHeads (got " +
                                std::to_string(a.numHeads) + "/" + std::to_string(a.numKvHeads) + ")");
  }
  if (a.numSplits < 1 || a.numSplits > kMaxAttentionSplits || (a.numSplits > 1 && (a.workspace == nullptr || a.splitCounters == nullptr))) {
    throw std::invalid_argument("pagedAttention: numSplits must be in 1.." + std::to_string(kMaxAttentionSplits) +
                                " and split attention needs a workspace and split counters (numSplits " +
                                std::to_string(a.numSplits) + ")");
  }
  if (resolveAttentionKernel(a, AttentionKernel::Auto) == AttentionKernel::TensorCore) {
    tensorCoreAttention(a, stream);
    return;
  }
  switch (a.cacheDtype) {
    case kDtypeBf16: launchForDim<bf16>(a, stream); break;
    case kDtypeF16: launchForDim<__half>(a, stream); break;
    case kDtypeF32: launchForDim<float>(a, stream); break;
    default: throw std::invalid_argument("pagedAttention: KV cache dtype must be f32, f16 or bf16");
  }
  AFD_CUDA_CHECK_LAUNCH("pagedAttentionKernel");
}

}  // namespace afd::cuda
