#include "cuda/moe.cuh"

#include <stdexcept>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"
#include "cuda/dtype-load.cuh"

namespace afd::cuda {
namespace {

constexpr int kMaxExperts = 1024;
constexpr int kMaxTopK = 32;

// Top-k of one token by one warp. Selected experts are remembered in lane-local bits
// (E <= 1024).
// Top-k of one token by one warp. Selected experts are remembered in lane-local bits
// (E <= 1024).
__device__ void topkRow(const float* logitsAll, int row, int E, int topK, bool norm, int32_t* ids, float* weights) {
  const int lane = threadIdx.x & 31;
  const float* logits = logitsAll + static_cast<size_t>(row) * E;
  float mx = -INFINITY;
  for (int e = lane; e < E; e += 32) mx = fmaxf(mx, logits[e]);
  mx = warpMax(mx);
  float sum = 0.0f;
  for (int e = lane; e < E; e += 32) sum += expf(logits[e] - mx);
  sum = warpSum(sum);
  uint32_t taken = 0;
  float chosenSum = 0.0f;
  for (int k = 0; k < topK; ++k) {
    float best = -INFINITY;
    int bestId = 0x7fffffff;
    for (int i = 0, e = lane; e < E; ++i, e += 32) {
      const float v = logits[e];
      if ((taken >> i & 1u) == 0 && (v > best || bestId == 0x7fffffff)) {
        best = v;
        bestId = e;
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, off);
      const int oid = __shfl_xor_sync(0xffffffffu, bestId, off);
      if (oid != 0x7fffffff && (bestId == 0x7fffffff || ov > best || (ov == best && oid < bestId))) {
        best = ov;
        bestId = oid;
      }
    }
    if (bestId % 32 == lane) taken |= 1u << (bestId / 32);
    const float w = expf(best - mx) / sum;
    chosenSum += w;
    if (lane == 0) {
      ids[row * topK + k] = bestId;
      weights[row * topK + k] = w;
    }
  }
  if (norm && lane == 0) {
    for (int k = 0; k < topK; ++k) weights[row * topK + k] /= chosenSum;
  }
}

// One warp per token.
__global__ void moeTopKKernel(const float* logits, int rows, int E, int topK, bool norm, int32_t* ids, float* weights) {
  pdlWait();
  const int row = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (row < rows) topkRow(logits, row, E, topK, norm, ids, weights);
}

// One block: count rows per expert, scan, list active experts, assign permuted rows.
// Row order inside an expert follows atomics; every permuted row is computed
// independently, so results do not depend on it.
__device__ void permuteBlock(const int32_t* ids, int pairs, int E, int topK, int gridSlots, const MoePermutation& out) {
  __shared__ int counts[kMaxExperts];
  __shared__ int offsets[kMaxExperts + 1];
  const int tid = threadIdx.x;
  for (int e = tid; e < E; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  // A pair with expert id -1 is masked (expert parallelism: another rank's expert): no row.
  for (int p = tid; p < pairs; p += blockDim.x) {
    if (ids[p] >= 0) atomicAdd(&counts[ids[p]], 1);
  }
  __syncthreads();
  if (tid < 32) {
    // Warp 0 scans: each lane owns a contiguous run of experts; exclusive prefix sums of
    // rows and of active experts give offsets and grid slots (expert order preserved).
    const int per = (E + 31) / 32;
    const int e0 = min(E, tid * per);
    const int e1 = min(E, e0 + per);
    int rowsHere = 0, activeHere = 0;
    for (int e = e0; e < e1; ++e) {
      rowsHere += counts[e];
      activeHere += counts[e] > 0 ? 1 : 0;
    }
    int rowsIncl = rowsHere, activeIncl = activeHere;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int r = __shfl_up_sync(0xffffffffu, rowsIncl, off);
      const int a = __shfl_up_sync(0xffffffffu, activeIncl, off);
      if (tid >= off) {
        rowsIncl += r;
        activeIncl += a;
      }
    }
    int running = rowsIncl - rowsHere;
    int slot = activeIncl - activeHere;
    for (int e = e0; e < e1; ++e) {
      offsets[e] = running;
      running += counts[e];
      if (counts[e] > 0) {
        if (slot < gridSlots) out.activeExperts[slot] = e;
        ++slot;
      }
    }
    const int totalActive = __shfl_sync(0xffffffffu, activeIncl, 31);
    const int totalRows = __shfl_sync(0xffffffffu, rowsIncl, 31);
    if (tid == 0) {
      offsets[E] = totalRows;
      if (out.activeCount != nullptr) *out.activeCount = totalActive;
    }
    for (int s = totalActive + tid; s < gridSlots; s += 32) out.activeExperts[s] = -1;
  }
  __syncthreads();
  for (int e = tid; e <= E; e += blockDim.x) out.expertOffsets[e] = offsets[e];
  for (int e = tid; e < E; e += blockDim.x) counts[e] = 0;  // reused as cursors
  __syncthreads();
  for (int p = tid; p < pairs; p += blockDim.x) {
    const int e = ids[p];
    if (e < 0) {
      out.pairPosition[p] = -1;
      continue;
    }
    const int pos = offsets[e] + atomicAdd(&counts[e], 1);
    out.sortedSourceRow[pos] = p / topK;
    out.pairPosition[p] = pos;
  }
}

__global__ void __launch_bounds__(1024) moePermuteKernel(const int32_t* ids, int pairs, int E, int topK, int gridSlots,
                                                         MoePermutation out) {
  pdlWait();
  permuteBlock(ids, pairs, E, topK, gridSlots, out);
}

// Decode: top-k of every token and the permutation in one launch (one block).
__global__ void __launch_bounds__(1024) moeRouteKernel(const float* logits, int rows, int E, int topK, bool norm,
                                                       int32_t* ids, float* weights, int gridSlots, MoePermutation out) {
  pdlWait();
  for (int row = threadIdx.x >> 5; row < rows; row += blockDim.x >> 5) topkRow(logits, row, E, topK, norm, ids, weights);
  __syncthreads();
  permuteBlock(ids, rows * topK, E, topK, gridSlots, out);
}

// Decode router for few rows: one warp per expert computes its logit for every row
// (16-byte weight loads, all rows per weight load), then the last block to finish runs
// the top-k (on a shared-memory copy of the logits) and the permutation.
constexpr int kRouterWarps = 4;
__global__ void __launch_bounds__(kRouterWarps * 32) moeRouterRouteKernel(MoeRouterRouteArgs a) {
  pdlWait();
  __shared__ float logitsSmem[kRouterFusedMaxRows * kMaxExperts];
  __shared__ int isLast;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int expert = blockIdx.x * kRouterWarps + warp;
  const int H = a.hidden, E = a.numExperts;
  if (expert < E) {
    const bf16* w = static_cast<const bf16*>(a.w) + static_cast<size_t>(expert) * H;
    const bf16* x = static_cast<const bf16*>(a.x);
    float acc[kRouterFusedMaxRows];
#pragma unroll
    for (int r = 0; r < kRouterFusedMaxRows; ++r) acc[r] = 0.0f;
#pragma unroll 4
    for (int c = lane * 8; c < H; c += 32 * 8) {
      float wf[8];
      bf16x8ToFloat(__ldg(reinterpret_cast<const uint4*>(w + c)), wf);
#pragma unroll
      for (int r = 0; r < kRouterFusedMaxRows; ++r) {
        if (r < a.rows) {
          float xf[8];
          bf16x8ToFloat(*reinterpret_cast<const uint4*>(x + static_cast<size_t>(r) * H + c), xf);
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[r] += wf[i] * xf[i];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRouterFusedMaxRows; ++r) {
      if (r < a.rows) {
        const float v = warpSum(acc[r]);
        if (lane == 0) a.logits[static_cast<size_t>(r) * E + expert] = v;
      }
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) isLast = atomicAdd(a.doneCounter, 1) == static_cast<int>(gridDim.x) - 1;
  __syncthreads();
  if (!isLast) return;
  __threadfence();
  for (int i = threadIdx.x; i < a.rows * E; i += blockDim.x) logitsSmem[i] = __ldcg(&a.logits[i]);
  __syncthreads();
  for (int row = warp; row < a.rows; row += kRouterWarps)
    topkRow(logitsSmem, row, E, a.topK, a.normTopkProb, a.topkIds, a.topkWeights);
  __syncthreads();
  permuteBlock(a.topkIds, a.rows * a.topK, E, a.topK, a.gridSlots, a.perm);
  if (threadIdx.x == 0) *a.doneCounter = 0;
}

__global__ void moeCombineKernel(MoeCombineArgs a) {
  pdlWait();
  __shared__ float scratch[32];
  __shared__ int pos[kMaxTopK];
  __shared__ float weight[kMaxTopK];
  __shared__ int pairs;
  const int row = blockIdx.x;
  if (threadIdx.x < 32) {
    // The row's routed pairs, in k order; a masked pair (position -1: another FFN rank's
    // expert under expert parallelism) adds nothing, and a row with none is just the addend (or 0).
    const int k = threadIdx.x;
    const int p = k < a.topK ? a.pairPosition[row * a.topK + k] : -1;
    const unsigned routed = __ballot_sync(0xffffffffu, p >= 0);
    if (p >= 0) {
      const int at = __popc(routed & ((1u << k) - 1u));
      pos[at] = p;
      weight[at] = a.topkWeights[row * a.topK + k];
    }
    if (k == 0) pairs = __popc(routed);
  }
  __syncthreads();
  const int topK = pairs;
  if (a.outIsBf16) {
    bf16* dst = static_cast<bf16*>(a.out) + static_cast<size_t>(row) * a.hidden;
    for (int i = threadIdx.x; i < a.hidden; i += blockDim.x) {
      float add = 0.0f;
#pragma unroll 8
      for (int k = 0; k < topK; ++k) add += weight[k] * a.expertOut[static_cast<size_t>(pos[k]) * a.hidden + i];
      if (a.addend != nullptr) add += __bfloat162float(static_cast<const bf16*>(a.addend)[static_cast<size_t>(row) * a.hidden + i]);
      dst[i] = __float2bfloat16(add);
    }
    return;
  }
  float* dst = static_cast<float*>(a.out) + static_cast<size_t>(row) * a.hidden;
  float sumSquares = 0.0f;
  for (int i = threadIdx.x; i < a.hidden; i += blockDim.x) {
    float add = 0.0f;
#pragma unroll 8
    for (int k = 0; k < topK; ++k) add += weight[k] * a.expertOut[static_cast<size_t>(pos[k]) * a.hidden + i];
    if (a.addend != nullptr) add += static_cast<const float*>(a.addend)[static_cast<size_t>(row) * a.hidden + i];
    const float v = a.accumulate ? dst[i] + add : add;
    dst[i] = v;
    sumSquares += v * v;
  }
  if (a.normWeight == nullptr) return;
  const float total = blockSum(sumSquares, scratch);
  const float scale = rsqrtf(total / static_cast<float>(a.hidden) + a.eps);
  bf16* normOut = static_cast<bf16*>(a.normOut) + static_cast<size_t>(row) * a.hidden;
  for (int i = threadIdx.x; i < a.hidden; i += blockDim.x) {
    normOut[i] = __float2bfloat16(loadAsFloat(a.normWeight, a.normDtype, i) * (dst[i] * scale));
  }
}

}  // namespace

void moeTopK(const float* logits, int rows, int numExperts, int topK, bool normTopkProb, int32_t* topkIds,
             float* topkWeights, cudaStream_t stream) {
  if (rows == 0) return;
  if (numExperts <= 0 || numExperts > kMaxExperts || topK <= 0 || topK > kMaxTopK || topK > numExperts) {
    throw std::invalid_argument("moeTopK: need 0 < topK <= min(32, numExperts) and numExperts <= 1024 (got " +
                                std::to_string(topK) + " of " + std::to_string(numExperts) + ")");
  }
  constexpr int kWarpsPerBlock = 8;
  AFD_CUDA_CHECK(launchKernel(moeTopKKernel, (rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kWarpsPerBlock * 32, 0, stream, logits, rows, numExperts, topK, normTopkProb, topkIds, topkWeights));
  AFD_CUDA_CHECK_LAUNCH("moeTopKKernel");
}

void moePermute(const int32_t* topkIds, int rows, int numExperts, int topK, int gridSlots, const MoePermutation& out,
                cudaStream_t stream) {
  if (rows == 0) return;
  if (numExperts <= 0 || numExperts > kMaxExperts) throw std::invalid_argument("moePermute: numExperts must be in 1..1024");
  if (gridSlots < moeGridSlots(rows, numExperts, topK)) {
    throw std::invalid_argument("moePermute: gridSlots " + std::to_string(gridSlots) + " < experts possibly active " +
                                std::to_string(moeGridSlots(rows, numExperts, topK)));
  }
  AFD_CUDA_CHECK(launchKernel(moePermuteKernel, 1, 1024, 0, stream, topkIds, rows * topK, numExperts, topK, gridSlots, out));
  AFD_CUDA_CHECK_LAUNCH("moePermuteKernel");
}

bool moeRouterRouteSupported(int rows, int hidden, int numExperts, int topK) {
  return rows > 0 && rows <= kRouterFusedMaxRows && hidden % 8 == 0 && numExperts > 0 && numExperts <= kMaxExperts &&
         topK > 0 && topK <= kMaxTopK && topK <= numExperts;
}

void moeRouterRoute(const MoeRouterRouteArgs& a, cudaStream_t stream) {
  if (!moeRouterRouteSupported(a.rows, a.hidden, a.numExperts, a.topK) || a.doneCounter == nullptr ||
      a.gridSlots < moeGridSlots(a.rows, a.numExperts, a.topK)) {
    throw std::invalid_argument("moeRouterRoute: needs 1.." + std::to_string(kRouterFusedMaxRows) +
                                " rows, hidden % 8 == 0, numExperts <= 1024, 0 < topK <= 32, a done counter and enough "
                                "grid slots (got rows " + std::to_string(a.rows) + ", hidden " + std::to_string(a.hidden) +
                                "); use the router linear + moeRoute otherwise");
  }
  const int blocks = (a.numExperts + kRouterWarps - 1) / kRouterWarps;
  AFD_CUDA_CHECK(launchKernel(moeRouterRouteKernel, blocks, kRouterWarps * 32, 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("moeRouterRouteKernel");
}

void moeRoute(const float* logits, int rows, int numExperts, int topK, bool normTopkProb, int32_t* topkIds,
              float* topkWeights, int gridSlots, const MoePermutation& out, cudaStream_t stream) {
  if (rows == 0) return;
  if (numExperts <= 0 || numExperts > kMaxExperts || topK <= 0 || topK > kMaxTopK || topK > numExperts ||
      gridSlots < moeGridSlots(rows, numExperts, topK)) {
    throw std::invalid_argument("moeRoute: need 0 < topK <= min(32, numExperts), numExperts <= 1024 and enough grid slots");
  }
  AFD_CUDA_CHECK(launchKernel(moeRouteKernel, 1, 1024, 0, stream, logits, rows, numExperts, topK, normTopkProb, topkIds, topkWeights, gridSlots,
                                         out));
  AFD_CUDA_CHECK_LAUNCH("moeRouteKernel");
}

void moeCombine(const MoeCombineArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  if (a.topK <= 0 || a.topK > kMaxTopK) throw std::invalid_argument("moeCombine: topK must be in 1..32");
  if (a.outIsBf16 && (a.accumulate || a.normWeight != nullptr))
    throw std::invalid_argument("moeCombine: a bf16 out takes neither accumulate nor the fused norm");
  AFD_CUDA_CHECK(launchKernel(moeCombineKernel, a.rows, 1024, 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("moeCombineKernel");
}

}  // namespace afd::cuda
