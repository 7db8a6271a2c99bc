// Tensor-core paged attention, decode: one block per (query, kv head, split). The GQA
// group's q heads (<= 16) are the MMA rows; each 64-key tile of K and V is copied once per
// block (cp.async, kStages deep) and its four 16-key slices go to the four warps, each with
// its own online softmax; the warps merge in shared memory at the end, and the splits of a
// (query, kv head) pair merge in the last block to finish (attention-split.cuh).
//
// Expected cost (Qwen3-30B-A3B: 32/4 heads of 128, bf16 KV, context 1024, H200): the op
// reads 2 x 1024 x 256 B = 512 KB of K/V per (sequence, kv head), 134 MB at batch 64 and
// 537 MB at batch 256, while its math (4 MMAs per 16x8x16 step with hi/lo, rows half empty
// for a group of 8) is ~2.1 / 8.6 GFLOP of tensor work, under 10 us at mma.sync rates. So
// it is KV-bandwidth bound: 3 x 32 KB stages per block, 2 blocks per SM keep ~128 KB per
// SM in flight (Little: 4.8 TB/s x ~1.5 us / 132 SMs = 55 KB needed). Expected ~35-40 us
// per layer at batch 64 (512 blocks = ~2 waves, 134 MB at ~4 TB/s) and ~130-140 us at
// batch 256 (1024 blocks), versus 124 us and ~500 us for the SIMT kernel (FMA bound).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/attention-mma.cuh"
#include "cuda/attention-split.cuh"
#include "cuda/attention-tc.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 128;      // 4 warps
constexpr int kKeys = 64;          // keys per tile: 16 per warp
constexpr int kRows = 16;          // one m16 row tile = the GQA group, zero-padded
constexpr int kMinSplitKeys = 64;  // a split covers at least one tile

template <int D>
struct DecodeShape {
  static constexpr int kStages = D == 256 ? 2 : 3;
  static constexpr int kStageElems = 2 * kKeys * D;
  static constexpr size_t kSharedBytes = sizeof(bf16) * (2 * kRows * D + static_cast<size_t>(kStages) * kStageElems);
  static_assert(sizeof(float) * 4 * kRows * D <= sizeof(bf16) * kStages * kStageElems, "warp partials reuse the stages");
};

template <int D>
__global__ void __launch_bounds__(kThreads) tcDecodeKernel(PagedAttentionArgs a) {
  pdlWait();
  using Shape = DecodeShape<D>;
  extern __shared__ __align__(128) uint8_t shared[];
  bf16* qHi = reinterpret_cast<bf16*>(shared);
  bf16* qLo = qHi + kRows * D;
  bf16* stages = qLo + kRows * D;
  __shared__ float warpM[4][kRows], warpL[4][kRows], warpWeight[4][kRows], rowM[kRows], rowL[kRows];

  const int query = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int G = a.numHeads / a.numKvHeads;
  const int ctx = a.positions[query] + 1;
  // Splits actually used for this query: short contexts need fewer (>= one tile each).
  const int used = min(a.numSplits, max(1, (ctx + kMinSplitKeys - 1) / kMinSplitKeys));
  if (split >= used) return;
  const int splitLen = (ctx + used - 1) / used;
  const int s0 = min(ctx, split * splitLen), s1 = min(ctx, s0 + splitLen);
  const int seq = a.querySeq != nullptr ? a.querySeq[query] : query;
  const size_t headBase = static_cast<size_t>(query) * a.numHeads + static_cast<size_t>(kvh) * G;

  // q: [numQueries, numHeads, D] -> rows h < G of the tile, scaled into log2 units.
  const float qScale = a.scale * tc::kLog2e;
  for (int idx = threadIdx.x; idx < kRows * (D / 8); idx += kThreads) {
    const int row = idx / (D / 8), chunk = idx % (D / 8);
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row < G) tc::loadScaled8(a.q + (headBase + row) * D + chunk * 8, qScale, v);
    tc::storeQChunk(qHi, qLo, tc::swizzled<D>(row, chunk), v);
  }
  __syncthreads();

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  const tc::KvSource src{static_cast<const bf16*>(a.kCache), static_cast<const bf16*>(a.vCache),
                         a.blockTables + static_cast<size_t>(seq) * a.maxBlocksPerSeq, a.blockSize, a.numKvHeads, kvh};
  tc::streamKvTiles<D, kKeys, Shape::kStages, kThreads>(stages, src, s0, s1, [&](const bf16* kTile, const bf16* vTile,
                                                                                  int tileKey0) {
    const int warpKey0 = tileKey0 + warp * 16;
    if (warpKey0 >= s1) return;
    float s[2][4];
    tc::warpScores<D, 2>(s, qHi, qLo, 0, kTile, warp * 16);
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (warpKey0 + n * 8 + 2 * (lane & 3) + (e & 1) >= s1) s[n][e] = -INFINITY;
    tc::warpSoftmaxPv<D, 2>(s, m, l, o, vTile, warp * 16);
  });

  // Merge the four warps: partial outputs into the (now idle) stage memory.
  float* warpOut = reinterpret_cast<float*>(stages);  // [4][kRows][D]
  const int g = lane >> 2, c = lane & 3;
  l[0] = tc::quadSum(l[0]);
  l[1] = tc::quadSum(l[1]);
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    float* r0 = warpOut + (warp * kRows + g) * D + dt * 8 + 2 * c;
    float* r1 = r0 + 8 * D;
    *reinterpret_cast<float2*>(r0) = make_float2(o[dt][0], o[dt][1]);
    *reinterpret_cast<float2*>(r1) = make_float2(o[dt][2], o[dt][3]);
  }
  if (c == 0) {
    warpM[warp][g] = m[0];
    warpM[warp][g + 8] = m[1];
    warpL[warp][g] = l[0];
    warpL[warp][g + 8] = l[1];
  }
  __syncthreads();
  if (threadIdx.x < kRows) {
    const int r = threadIdx.x;
    float mMax = -INFINITY;
    for (int w = 0; w < 4; ++w) mMax = fmaxf(mMax, warpM[w][r]);
    const float base = mMax == -INFINITY ? 0.0f : mMax;
    float sum = 0.0f;
    for (int w = 0; w < 4; ++w) {
      warpWeight[w][r] = exp2f(warpM[w][r] - base);
      sum += warpWeight[w][r] * warpL[w][r];
    }
    rowM[r] = mMax;
    rowL[r] = sum;
  }
  __syncthreads();
  const size_t pairIndex = static_cast<size_t>(query) * a.numKvHeads + kvh;
  float* partial = used > 1 ? splitPartial(a, pairIndex, split, G, D) : nullptr;
  for (int idx = threadIdx.x; idx < G * D; idx += kThreads) {
    const int r = idx / D;
    float v = 0.0f;
#pragma unroll
    for (int w = 0; w < 4; ++w) v += warpWeight[w][r] * warpOut[(w * kRows + r) * D + idx % D];
    if (used == 1) {
      a.out[headBase * D + idx] = rowL[r] > 0.0f ? v / rowL[r] : 0.0f;
    } else {
      partial[idx] = v;
    }
  }
  if (used == 1) return;
  if (threadIdx.x < G) {
    float* stats = splitStats(a, pairIndex, split, G, D);
    const float mMax = rowM[threadIdx.x];
    stats[threadIdx.x] = mMax == -INFINITY ? -INFINITY : mMax * tc::kLn2;  // natural-log units
    stats[G + threadIdx.x] = rowL[threadIdx.x];
  }
  combineSplitsIfLast<kTensorCoreMaxGroup, kThreads>(a, pairIndex, used, G, D, headBase);
}

template <int D>
void launchDecode(const PagedAttentionArgs& a, cudaStream_t stream) {
  constexpr size_t bytes = DecodeShape<D>::kSharedBytes;
  static std::atomic<uint64_t> sharedConfigured{0};  // devices where the opt-in is done
  allowDynamicShared(tcDecodeKernel<D>, bytes, sharedConfigured);
  const dim3 grid(a.numQueries, a.numKvHeads, a.numSplits);
  AFD_CUDA_CHECK(launchKernel(tcDecodeKernel<D>, grid, kThreads, bytes, stream, a));
}

}  // namespace

void tensorCoreDecode(const PagedAttentionArgs& a, cudaStream_t stream) {
  withTensorCoreHeadDim(a.headDim, "tensorCoreDecode", [&](auto d) { launchDecode<decltype(d)::value>(a, stream); });
  AFD_CUDA_CHECK_LAUNCH("tcDecodeKernel");
}

}  // namespace afd::cuda
