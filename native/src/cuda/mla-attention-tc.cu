// Step 2 of MLA attention (mla-attention.cuh) on the tensor cores, for the latent shape of
// DeepSeek V2 and V3 (kv_lora_rank 512, rope 64: rows of 576) and a bf16 cache. One block
// per (token, tile of 16 heads, chunk of the context), 8 warps; per sub-tile of 64 cache
// rows (cp.async into shared memory):
//   scores  S[16 heads][64 rows] = qLatent . row: warp w owns rows 8w..8w+7, mma over the
//           576 columns (q split into bf16 hi + lo, so the product is ~f32 exact);
//   softmax online per head over the sub-tile (warp w owns heads 2w, 2w + 1), P in bf16
//           hi + lo;
//   latent  O[16][512] += P . rows[:, :512]: warp w owns columns 64w..64w+63.
// The partials it writes ([token, head, chunk][512 + 2]: the attended latent, the running
// max in natural-log units, the sum) are those of the SIMT kernel, merged by
// mlaLatentOut. Each value's order of operations depends only on the token's own context
// and chunking, so a DBO stage reproduces the whole step's bits.
#include "cuda/mla-attention-tc.cuh"

#include <atomic>
#include <cstdint>

#include "cuda/attention-mma.cuh"
#include "cuda/attention-tc.cuh"
#include "cuda/dtype-load.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"
#include "cuda/mla-absorb.cuh"

namespace afd::cuda {
namespace {

constexpr int kLatent = 512;
constexpr int kWidth = kLatent + 64;  // latent + rope columns of a cache row
constexpr int kRows = 16;             // heads per block: one m16 tile
constexpr int kKeys = kMlaQuantum;    // cache rows per sub-tile
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kColsPerWarp = kLatent / kWarps;  // 64 latent columns of O per warp
static_assert(kKeys == 8 * kWarps, "one 8-row score tile per warp");

constexpr size_t kSharedBytes = sizeof(bf16) * (2 * kRows * kWidth + kKeys * kWidth + 2 * kRows * kKeys) +
                                sizeof(float) * (kRows * kKeys + 3 * kRows) + sizeof(int32_t) * kKeys;

__global__ void __launch_bounds__(kThreads) mlaTcPartialKernel(MlaAttentionArgs a) {
  pdlWait();
  extern __shared__ __align__(128) uint8_t shared[];
  bf16* qHi = reinterpret_cast<bf16*>(shared);  // [16][576] swizzled, q * scale * log2(e)
  bf16* qLo = qHi + kRows * kWidth;
  bf16* kTile = qLo + kRows * kWidth;  // [64][576] swizzled cache rows
  bf16* pHi = kTile + kKeys * kWidth;  // [16][64] swizzled probabilities
  bf16* pLo = pHi + kRows * kKeys;
  float* scores = reinterpret_cast<float*>(pLo + kRows * kKeys);  // [16][64] log2 units
  float* alpha = scores + kRows * kKeys;                           // [16]
  float* runMax = alpha + kRows;                                   // [16] log2 units
  float* runSum = runMax + kRows;                                  // [16]
  int32_t* slots = reinterpret_cast<int32_t*>(runSum + kRows);     // [64]

  const int t = blockIdx.x, h0 = blockIdx.y * kRows, chunk = blockIdx.z;
  const int ht = min(kRows, a.heads - h0);
  const int ctx = a.positions[t] + 1;
  int chunkLen = 0, numChunks = 0;
  mlaTokenChunks(ctx, a.maxChunks, chunkLen, numChunks);
  if (chunk >= numChunks) return;  // uniform over the block
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, c = lane & 3;

  const float qScale = a.scale * tc::kLog2e;
  const float* qSrc = a.qLatent + (static_cast<size_t>(t) * a.heads + h0) * kWidth;
  for (int idx = threadIdx.x; idx < kRows * (kWidth / 8); idx += kThreads) {
    const int row = idx / (kWidth / 8), ch = idx % (kWidth / 8);
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row < ht) tc::loadScaled8(qSrc + static_cast<size_t>(row) * kWidth + ch * 8, qScale, v);
    tc::storeQChunk(qHi, qLo, tc::swizzled<kWidth>(row, ch), v);
  }
  if (threadIdx.x < kRows) {
    runMax[threadIdx.x] = -INFINITY;
    runSum[threadIdx.x] = 0.0f;
  }
  float o[kColsPerWarp / 8][4];
#pragma unroll
  for (int n = 0; n < kColsPerWarp / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

  const bf16* cache = static_cast<const bf16*>(a.cache);
  const int32_t* table = a.blockTables + static_cast<size_t>(a.tokenSeq[t]) * a.maxBlocksPerSeq;
  const int p0 = chunk * chunkLen, p1 = min(p0 + chunkLen, ctx);
  for (int s0 = p0; s0 < p1; s0 += kKeys) {
    const int n = min(kKeys, p1 - s0);
    if (threadIdx.x < kKeys) {
      const int p = s0 + threadIdx.x;
      slots[threadIdx.x] = threadIdx.x < n ? table[p / a.blockSize] * a.blockSize + p % a.blockSize : -1;
    }
    __syncthreads();  // slots written; the previous sub-tile's readers are done
    for (int idx = threadIdx.x; idx < kKeys * (kWidth / 8); idx += kThreads) {
      const int row = idx / (kWidth / 8), ch = idx % (kWidth / 8);
      const bool valid = slots[row] >= 0;
      const bf16* src = cache + (valid ? static_cast<size_t>(slots[row]) * kWidth + ch * 8 : 0);
      tc::cpAsync16(tc::sharedAddress(kTile + tc::swizzled<kWidth>(row, ch)), src, valid);
    }
    tc::cpAsyncCommit();
    tc::cpAsyncWait<0>();
    __syncthreads();

    // Scores of rows 8w..8w+7: two k-steps per B load (ldmatrix.x4 over 8 rows x 32 cols).
    {
      float sHi[4] = {0, 0, 0, 0}, sLo[4] = {0, 0, 0, 0};
#pragma unroll 6
      for (int kp = 0; kp < kWidth / 32; ++kp) {
        uint32_t b[4];
        tc::ldmatrixX4(b, tc::sharedAddress(kTile + tc::swizzled<kWidth>(warp * 8 + (lane & 7), 4 * kp + (lane >> 3))));
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int ks = 2 * kp + half;
          uint32_t ah[4], al[4];
          const int qOff = tc::swizzled<kWidth>(lane & 15, 2 * ks + (lane >> 4));
          tc::ldmatrixX4(ah, tc::sharedAddress(qHi + qOff));
          tc::ldmatrixX4(al, tc::sharedAddress(qLo + qOff));
          tc::mma16816(sHi, ah, b[2 * half], b[2 * half + 1]);
          tc::mma16816(sLo, al, b[2 * half], b[2 * half + 1]);
        }
      }
      // Fragment: heads g (e 0, 1) and g + 8 (e 2, 3), rows 8w + 2c + (e & 1).
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int head = g + (e >> 1) * 8, row = warp * 8 + 2 * c + (e & 1);
        scores[head * kKeys + row] = row < n ? sHi[e] + sLo[e] : -INFINITY;
      }
    }
    __syncthreads();

    // Online softmax, heads 2w and 2w + 1, two rows per lane.
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int head = 2 * warp + hh;
      const float v0 = scores[head * kKeys + lane], v1 = scores[head * kKeys + lane + 32];
      const float mOld = runMax[head];
      const float mNew = fmaxf(mOld, warpMax(fmaxf(v0, v1)));  // row 0 is always valid
      const float e0 = exp2f(v0 - mNew), e1 = exp2f(v1 - mNew);
      const float sum = warpSum(e0 + e1);
      uint32_t hi, lo;
      // Lane pairs (2i, 2i + 1) hold adjacent rows: lane 2i packs rows 2i, 2i+1 and 2i+32, 2i+33.
      const float n0 = __shfl_down_sync(0xffffffffu, e0, 1), n1 = __shfl_down_sync(0xffffffffu, e1, 1);
      if ((lane & 1) == 0) {
        tc::splitHiLo(e0, n0, hi, lo);
        const int at0 = tc::swizzled<kKeys>(head, lane / 8) + (lane & 7);
        *reinterpret_cast<uint32_t*>(pHi + at0) = hi;
        *reinterpret_cast<uint32_t*>(pLo + at0) = lo;
        tc::splitHiLo(e1, n1, hi, lo);
        const int at1 = tc::swizzled<kKeys>(head, 4 + lane / 8) + (lane & 7);
        *reinterpret_cast<uint32_t*>(pHi + at1) = hi;
        *reinterpret_cast<uint32_t*>(pLo + at1) = lo;
      }
      if (lane == 0) {
        alpha[head] = exp2f(mOld - mNew);  // 0 on the first sub-tile (mOld = -inf)
        runSum[head] = runSum[head] * alpha[head] + sum;
        runMax[head] = mNew;
      }
    }
    __syncthreads();

    // O[:, 64w..64w+63] = O * alpha + P . rows: 4 k-steps of 16 rows, 4 column pairs.
    const float a0 = alpha[g], a1 = alpha[g + 8];
#pragma unroll
    for (int nt = 0; nt < kColsPerWarp / 8; ++nt) {
      o[nt][0] *= a0;
      o[nt][1] *= a0;
      o[nt][2] *= a1;
      o[nt][3] *= a1;
    }
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t ph[4], pl[4];
      const int pOff = tc::swizzled<kKeys>(lane & 15, 2 * kk + (lane >> 4));
      tc::ldmatrixX4(ph, tc::sharedAddress(pHi + pOff));
      tc::ldmatrixX4(pl, tc::sharedAddress(pLo + pOff));
#pragma unroll
      for (int dp = 0; dp < kColsPerWarp / 16; ++dp) {
        const int mi = lane >> 3;
        const int chunkCol = (warp * kColsPerWarp) / 8 + 2 * dp + (mi >> 1);
        uint32_t b[4];
        tc::ldmatrixX4Trans(b, tc::sharedAddress(kTile + tc::swizzled<kWidth>(kk * 16 + (mi & 1) * 8 + (lane & 7), chunkCol)));
        tc::mma16816(o[2 * dp], ph, b[0], b[1]);
        tc::mma16816(o[2 * dp], pl, b[0], b[1]);
        tc::mma16816(o[2 * dp + 1], ph, b[2], b[3]);
        tc::mma16816(o[2 * dp + 1], pl, b[2], b[3]);
      }
    }
  }
  __syncthreads();  // runMax / runSum final

  const size_t stride = static_cast<size_t>(kLatent) + 2;
  const size_t rowBase = (static_cast<size_t>(t) * a.heads + h0) * a.gridChunks + chunk;  // + head * gridChunks
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int head = g + 8 * half;
    if (head >= ht) continue;
    float* dst = a.partials + (rowBase + static_cast<size_t>(head) * a.gridChunks) * stride;
#pragma unroll
    for (int nt = 0; nt < kColsPerWarp / 8; ++nt) {
      const int col = warp * kColsPerWarp + nt * 8 + 2 * c;
      *reinterpret_cast<float2*>(dst + col) = make_float2(o[nt][2 * half], o[nt][2 * half + 1]);
    }
  }
  if (threadIdx.x < ht) {
    float* dst = a.partials + (rowBase + static_cast<size_t>(threadIdx.x) * a.gridChunks) * stride;
    dst[kLatent] = runMax[threadIdx.x] * tc::kLn2;
    dst[kLatent + 1] = runSum[threadIdx.x];
  }
}

}  // namespace

bool mlaTensorCoreFits(const MlaAttentionArgs& a) {
  return a.cacheDtype == kDtypeBf16 && a.latent == kLatent && a.rope == kWidth - kLatent &&
         reinterpret_cast<uintptr_t>(a.cache) % 16 == 0 && reinterpret_cast<uintptr_t>(a.qLatent) % 16 == 0;
}

void mlaTensorCorePartials(const MlaAttentionArgs& a, cudaStream_t stream) {
  static std::atomic<uint64_t> optIn{0};
  allowDynamicShared(mlaTcPartialKernel, kSharedBytes, optIn);
  const dim3 grid(a.tokens, (a.heads + kRows - 1) / kRows, a.gridChunks);
  AFD_CUDA_CHECK(launchKernel(mlaTcPartialKernel, grid, dim3(kThreads), kSharedBytes, stream, a));
  AFD_CUDA_CHECK_LAUNCH("mlaTcPartialKernel");
}

}  // namespace afd::cuda
