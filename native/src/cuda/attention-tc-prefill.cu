// Tensor-core paged attention, prefill (and any batch with several query tokens per
// sequence): one block per (tile of tokensPerTile = 64 / G consecutive query tokens, kv
// head). The tile's rows are (token, q head of the group) pairs, 16 per warp, so every
// K/V tile in shared memory serves 64 rows whatever the GQA group. Tokens of a tile that
// belong to different sequences (tile straddles a sequence change, or a run of decode
// rows in a mixed batch) form runs; grid z = min(tokens per tile, numSeqs) run slots, block
// z streams the contexts of runs z, z + gridDim.z, ... (so the decode rows of a mixed batch
// load their contexts in parallel blocks; blocks with no run exit at once). Exact for any
// querySeq/positions; every row sees keys [0, its position] (causal, chunked prefill).
// Decode rows in a mixed batch use 8 of a block's 64 rows (G = 8): fine for a few, but a
// mostly-decode batch should go through the decode kernel (maxQueryLen = 1).
//
// Cost: per 64-key tile a warp does D/16 x 8 MMAs for QK^T and 4 x D/8 for P.V, each
// twice with split precision (hi + lo operands) and once with bf16 (AttentionPrecision):
// split is 2x the tensor work of a plain bf16 kernel. Prefill of 4096 tokens on a 32/4 x 128
// layer is ~0.14 TFLOP of attention (x2 split) -> ~1 ms at mma.sync rates, against tens of
// ms on the SIMT kernel, which re-reads the context once per query token. A burst of
// prefix-cache hits (many sequences, ~100 new tokens each over thousands of cached ones) is
// all tensor work over cached keys: there the precision halves the kernel.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/attention-mma.cuh"
#include "cuda/attention-tc.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 128;  // 4 warps x 16 rows
constexpr int kRows = 64;
constexpr int kStages = 2;

template <int D, bool kSplit>
struct PrefillShape {
  static constexpr int kKeys = D == 256 ? 32 : 64;  // 256: the o accumulator alone is 128 registers
  static constexpr int kStageElems = 2 * kKeys * D;
  static constexpr int kQTiles = kSplit ? 2 : 1;  // q hi (+ lo)
  static constexpr size_t kSharedBytes = sizeof(bf16) * (kQTiles * kRows * D + static_cast<size_t>(kStages) * kStageElems);
  static constexpr int kMinBlocks = D == 256 ? 1 : 2;
};

template <int D, bool kSplit>
__global__ void __launch_bounds__(kThreads, PrefillShape<D, kSplit>::kMinBlocks) tcPrefillKernel(PagedAttentionArgs a,
                                                                                                 int tokensPerTile) {
  pdlWait();
  using Shape = PrefillShape<D, kSplit>;
  constexpr int kKeys = Shape::kKeys;
  extern __shared__ __align__(128) uint8_t shared[];
  bf16* qHi = reinterpret_cast<bf16*>(shared);
  bf16* qLo = qHi + kRows * D;  // kSplit only
  bf16* stages = qHi + Shape::kQTiles * kRows * D;
  __shared__ int tokenSeq[kRows], tokenPos[kRows], tokenRun[kRows];
  __shared__ int runBegin[kRows + 1], runMaxPos[kRows], numRuns;

  const int kvh = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int G = a.numHeads / a.numKvHeads;
  const int t0 = blockIdx.x * tokensPerTile;
  const int numTokens = min(tokensPerTile, a.numQueries - t0);
  const int numRows = numTokens * G;
  for (int i = threadIdx.x; i < numTokens; i += kThreads) {
    tokenSeq[i] = a.querySeq != nullptr ? a.querySeq[t0 + i] : t0 + i;
    tokenPos[i] = a.positions[t0 + i];
  }
  __syncthreads();
  // Runs of consecutive tokens of one sequence; block z takes runs z, z + gridDim.z, ...
  // so the decode rows of a mixed batch stream their contexts in parallel blocks.
  if (threadIdx.x == 0) {
    int runs = 0;
    for (int i = 0; i < numTokens; ++i) {
      if (i == 0 || tokenSeq[i] != tokenSeq[i - 1]) {
        runBegin[runs] = i;
        runMaxPos[runs++] = tokenPos[i];
      }
      runMaxPos[runs - 1] = max(runMaxPos[runs - 1], tokenPos[i]);
      tokenRun[i] = runs - 1;
    }
    runBegin[runs] = numTokens;
    numRuns = runs;
  }
  __syncthreads();
  if (static_cast<int>(blockIdx.z) >= numRuns) return;
  // q: [numQueries, numHeads, D]; tile row r = (token t0 + r / G, head kvh * G + r % G).
  const float qScale = a.scale * tc::kLog2e;
  for (int idx = threadIdx.x; idx < kRows * (D / 8); idx += kThreads) {
    const int row = idx / (D / 8), chunk = idx % (D / 8);
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row < numRows) {
      const size_t head = static_cast<size_t>(t0 + row / G) * a.numHeads + kvh * G + row % G;
      tc::loadScaled8(a.q + head * D + chunk * 8, qScale, v);
    }
    if constexpr (kSplit) {
      tc::storeQChunk(qHi, qLo, tc::swizzled<D>(row, chunk), v);
    } else {
      tc::storeQChunkBf16(qHi, tc::swizzled<D>(row, chunk), v);
    }
  }
  __syncthreads();

  const int g = lane >> 2, c = lane & 3;
  const int rowA = warp * 16 + g, rowB = rowA + 8;  // this thread's two rows
  const int tokA = rowA < numRows ? rowA / G : -1, tokB = rowB < numRows ? rowB / G : -1;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;

  for (int run = blockIdx.z; run < numRuns; run += gridDim.z) {
    // Rows outside the run are fully masked (position -1): their state does not change.
    const int posA = tokA >= 0 && tokenRun[tokA] == run ? tokenPos[tokA] : -1;
    const int posB = tokB >= 0 && tokenRun[tokB] == run ? tokenPos[tokB] : -1;
    int warpMaxPos = max(posA, posB);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) warpMaxPos = max(warpMaxPos, __shfl_xor_sync(0xffffffffu, warpMaxPos, off));
    const int seq = tokenSeq[runBegin[run]];
    const tc::KvSource src{static_cast<const bf16*>(a.kCache), static_cast<const bf16*>(a.vCache),
                           a.blockTables + static_cast<size_t>(seq) * a.maxBlocksPerSeq, a.blockSize, a.numKvHeads, kvh};
    tc::streamKvTiles<D, kKeys, kStages, kThreads>(stages, src, 0, runMaxPos[run] + 1, [&](const bf16* kTile,
                                                                                           const bf16* vTile, int tileKey0) {
      if (tileKey0 > warpMaxPos) return;  // causal: no row of this warp sees the tile
      float s[kKeys / 8][4];
      tc::warpScores<D, kKeys / 8, kSplit>(s, qHi, qLo, warp * 16, kTile, 0);
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (tileKey0 + n * 8 + 2 * c + (e & 1) > (e < 2 ? posA : posB)) s[n][e] = -INFINITY;
      tc::warpSoftmaxPv<D, kKeys / 8, kSplit>(s, m, l, o, vTile, 0);
    });
  }

  // out: [numQueries, numHeads, D]; the 4 lanes of a row hold 2 columns of each 8-wide tile.
  l[0] = tc::quadSum(l[0]);
  l[1] = tc::quadSum(l[1]);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = half == 0 ? rowA : rowB;
    if (row >= numRows || tokenRun[row / G] % gridDim.z != blockIdx.z) continue;  // another block's run
    const float inv = l[half] > 0.0f ? 1.0f / l[half] : 0.0f;
    float* dst = a.out + (static_cast<size_t>(t0 + row / G) * a.numHeads + kvh * G + row % G) * D + 2 * c;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      *reinterpret_cast<float2*>(dst + dt * 8) = make_float2(o[dt][2 * half] * inv, o[dt][2 * half + 1] * inv);
  }
}

template <int D, bool kSplit>
void launchPrefill(const PagedAttentionArgs& a, cudaStream_t stream) {
  constexpr size_t bytes = PrefillShape<D, kSplit>::kSharedBytes;
  static std::atomic<uint64_t> sharedConfigured{0};  // devices where the opt-in is done
  allowDynamicShared(tcPrefillKernel<D, kSplit>, bytes, sharedConfigured);
  const int tokensPerTile = kRows / (a.numHeads / a.numKvHeads);
  // Run slots per tile: a tile holds at most min(tokensPerTile, numSeqs) runs when the
  // tokens of a sequence are contiguous; more (interleaved input) share the slots.
  const int runSlots = a.numSeqs > 0 ? std::min(tokensPerTile, a.numSeqs) : tokensPerTile;
  const dim3 grid((a.numQueries + tokensPerTile - 1) / tokensPerTile, a.numKvHeads, runSlots);
  AFD_CUDA_CHECK(launchKernel(tcPrefillKernel<D, kSplit>, grid, kThreads, bytes, stream, a, tokensPerTile));
}

}  // namespace

bool tensorCoreAttentionFits(const PagedAttentionArgs& a) {
  return a.cacheDtype == kDtypeBf16 && isTensorCoreHeadDim(a.headDim) && a.numKvHeads > 0 && a.numHeads % a.numKvHeads == 0 &&
         a.numHeads / a.numKvHeads <= kTensorCoreMaxGroup;
}

void tensorCorePrefill(const PagedAttentionArgs& a, cudaStream_t stream) {
  withTensorCoreHeadDim(a.headDim, "tensorCorePrefill", [&](auto d) {
    if (a.precision == AttentionPrecision::Bf16) {
      launchPrefill<decltype(d)::value, false>(a, stream);
    } else {
      launchPrefill<decltype(d)::value, true>(a, stream);
    }
  });
  AFD_CUDA_CHECK_LAUNCH("tcPrefillKernel");
}

void tensorCoreAttention(const PagedAttentionArgs& a, cudaStream_t stream) {
  if (a.maxQueryLen > 1) {
    tensorCorePrefill(a, stream);
  } else {
    tensorCoreDecode(a, stream);
  }
}

}  // namespace afd::cuda
