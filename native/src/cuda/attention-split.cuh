// Flash-decoding split combine shared by the SIMT and tensor-core attention kernels: each
// (query, kv head, split) block leaves its unnormalised partial output and (m, l) in the
// workspace; the last block of a (query, kv head) pair to finish merges them, so the whole
// op stays one launch (graph-capturable, no host sync).
//
// Workspace layout (attentionWorkspaceBytes): partials [pairs, numSplits, G, D] f32, then
// stats [pairs, numSplits, 2, G] f32 (m in natural-log units, l); pair = query * nKv + kvh.
#pragma once
#include "cuda/attention.cuh"
#include "cuda/bf16-vec.cuh"

namespace afd::cuda {

inline constexpr int kMaxAttentionSplits = 64;  // sequence splits per (query, kv head)

__device__ __forceinline__ float* splitPartial(const PagedAttentionArgs& a, size_t pairIndex, int split, int G, int D) {
  return a.workspace + (pairIndex * a.numSplits + split) * static_cast<size_t>(G * D);
}
__device__ __forceinline__ float* splitStats(const PagedAttentionArgs& a, size_t pairIndex, int split, int G, int D) {
  return a.workspace + static_cast<size_t>(a.numQueries) * a.numKvHeads * a.numSplits * G * D +
         (pairIndex * a.numSplits + split) * 2 * G;
}

// Called by every thread of every split block after its partial and stats are written
// (plain stores). Counts the pair's arrivals; the last of numUsed blocks writes
// out[headBase + h, :] for the G heads and re-arms the counter. kThreads = blockDim.x.
template <int kMaxGroup, int kThreads>
__device__ void combineSplitsIfLast(const PagedAttentionArgs& a, size_t pairIndex, int numUsed, int G, int D,
                                    size_t headBase) {
  __shared__ int isLast;
  __shared__ float splitWeight[kMaxAttentionSplits][kMaxGroup];
  __shared__ float invNorm[kMaxGroup];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  __threadfence();
  __syncthreads();
  if (tid == 0) isLast = atomicAdd(&a.splitCounters[pairIndex], 1) == numUsed - 1;
  __syncthreads();
  if (!isLast) return;
  __threadfence();
  const float* allOut = splitPartial(a, pairIndex, 0, G, D);
  const float* allStats = splitStats(a, pairIndex, 0, G, D);
  // Per (split, head) weights once (one warp per head, lanes over splits), then every
  // 4 output elements are an independent sum with all splits' loads in flight (float4).
  for (int h = warp; h < G; h += kThreads / 32) {
    float mMax = -INFINITY;
    for (int sp = lane; sp < numUsed; sp += 32) mMax = fmaxf(mMax, __ldcg(&allStats[sp * 2 * G + h]));
    mMax = warpMax(mMax);
    float norm = 0.0f;
    for (int sp = lane; sp < numUsed; sp += 32) {
      const float m = __ldcg(&allStats[sp * 2 * G + h]);
      const float w = m == -INFINITY ? 0.0f : __expf(m - mMax);
      splitWeight[sp][h] = w;
      norm += w * __ldcg(&allStats[sp * 2 * G + G + h]);
    }
    norm = warpSum(norm);
    if (lane == 0) invNorm[h] = norm > 0.0f ? 1.0f / norm : 0.0f;
  }
  __syncthreads();
  const int groupDim = G * D;  // D is a multiple of 4: float4 groups never straddle heads
  for (int o = tid * 4; o < groupDim; o += kThreads * 4) {
    const int h = o / D;
    float4 total = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 16
    for (int sp = 0; sp < numUsed; ++sp) {
      const float w = splitWeight[sp][h];
      const float4 v = __ldcg(reinterpret_cast<const float4*>(&allOut[static_cast<size_t>(sp) * groupDim + o]));
      total.x += w * v.x;
      total.y += w * v.y;
      total.z += w * v.z;
      total.w += w * v.w;
    }
    float* dst = a.out + headBase * D + o;
    const float inv = invNorm[h];
    dst[0] = total.x * inv;
    dst[1] = total.y * inv;
    dst[2] = total.z * inv;
    dst[3] = total.w * inv;
  }
  if (tid == 0) a.splitCounters[pairIndex] = 0;
}

}  // namespace afd::cuda
