// Warp-level building blocks of the tensor-core attention kernels (sm_80+ mma.sync
// m16n8k16 bf16 -> f32, ldmatrix, cp.async), shared by decode and prefill.
//
// Precision (kSplit, AttentionPrecision in core/backend-options.h): split = q (f32) is
// pre-scaled by scale * log2(e) and split into bf16 hi + lo, and the probabilities
// likewise, so QK^T and P.V cost two MMAs each and stay within ~1e-5 of f32 math (K/V are
// exact bf16); bf16 = q and the probabilities rounded once to bf16 (what flash-attention and
// HF's bf16 models do), one MMA each: half the tensor work, ~1e-3 relative. Softmax runs in
// the log2 domain (exp2f) either way.
//
// Shared-memory tiles are row-major [rows][D] bf16 with the 16-byte chunks of a row
// XOR-swizzled by (row & 7), so the 8 row addresses of an ldmatrix hit 8 distinct banks.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/bf16-vec.cuh"

namespace afd::cuda::tc {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ uint32_t sharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Element offset of (row, 16-byte chunk) in a swizzled [rows][D] tile.
template <int D>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// 16 bytes global -> shared; valid == false writes zeros (no global read).
__device__ __forceinline__ void cpAsync16(uint32_t dst, const void* src, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrixX4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrixX4Trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c[16x8] += a[16x16] (row) * b[16x8] (col), bf16 in, f32 accumulate.
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// (x0, x1) -> bf16x2 hi and the bf16x2 of the rounding residual (x0 in the low half).
__device__ __forceinline__ void splitHiLo(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  const float2 hf = __bfloat1622float2(h);
  const __nv_bfloat162 l = __floats2bfloat162_rn(x0 - hf.x, x1 - hf.y);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = *reinterpret_cast<const uint32_t*>(&l);
}

// v = 8 f32 values at p (16-byte aligned) times scale.
__device__ __forceinline__ void loadScaled8(const float* p, float scale, float v[8]) {
  const float4 x = reinterpret_cast<const float4*>(p)[0], y = reinterpret_cast<const float4*>(p)[1];
  v[0] = x.x * scale; v[1] = x.y * scale; v[2] = x.z * scale; v[3] = x.w * scale;
  v[4] = y.x * scale; v[5] = y.y * scale; v[6] = y.z * scale; v[7] = y.w * scale;
}

// 8 f32 q values (pre-scaled) -> swizzled hi and lo tiles at element offset `off`.
__device__ __forceinline__ void storeQChunk(bf16* qHi, bf16* qLo, int off, const float v[8]) {
  uint4 hi, lo;
  uint32_t* h = reinterpret_cast<uint32_t*>(&hi);
  uint32_t* l = reinterpret_cast<uint32_t*>(&lo);
#pragma unroll
  for (int i = 0; i < 4; ++i) splitHiLo(v[2 * i], v[2 * i + 1], h[i], l[i]);
  *reinterpret_cast<uint4*>(qHi + off) = hi;
  *reinterpret_cast<uint4*>(qLo + off) = lo;
}

// 8 f32 q values (pre-scaled) -> the swizzled bf16 tile at element offset `off` (no lo part).
__device__ __forceinline__ void storeQChunkBf16(bf16* q, int off, const float v[8]) {
  uint4 hi;
  uint32_t* h = reinterpret_cast<uint32_t*>(&hi);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 x = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
    h[i] = *reinterpret_cast<const uint32_t*>(&x);
  }
  *reinterpret_cast<uint4*>(q + off) = hi;
}

// Where one (sequence, kv head)'s K/V rows live: cache [numBlocks, blockSize, nKv, D].
struct KvSource {
  const bf16* k;
  const bf16* v;
  const int32_t* table;  // the sequence's block-table row
  int blockSize;
  int numKvHeads;
  int kvh;
};

// K and V rows of keys [key0, key0 + kKeys) into swizzled tiles (keys >= keyEnd: zeros,
// so padded P.V products are 0 * 0, never 0 * garbage).
template <int D, int kKeys, int kThreads>
__device__ __forceinline__ void loadKvTile(bf16* kTile, bf16* vTile, const KvSource& src, int key0, int keyEnd) {
  constexpr int kChunks = D / 8;
  for (int idx = threadIdx.x; idx < kKeys * kChunks; idx += kThreads) {
    const int row = idx / kChunks, chunk = idx % kChunks;
    const int key = key0 + row;
    const bool valid = key < keyEnd;
    size_t off = 0;
    if (valid) {
      const size_t slot = static_cast<size_t>(src.table[key / src.blockSize]) * src.blockSize + key % src.blockSize;
      off = (slot * src.numKvHeads + src.kvh) * D + chunk * 8;
    }
    const int s = swizzled<D>(row, chunk);
    cpAsync16(sharedAddress(kTile + s), src.k + off, valid);
    cpAsync16(sharedAddress(vTile + s), src.v + off, valid);
  }
}

// Streams keys [keyBegin, keyEnd) through kStages shared stages (K tile then V tile, kKeys
// rows each) and calls compute(kTile, vTile, tileKey0) once per tile on every thread.
// Leaves no copy in flight and ends with a block barrier (the stages may be reused).
template <int D, int kKeys, int kStages, int kThreads, typename Compute>
__device__ __forceinline__ void streamKvTiles(bf16* stages, const KvSource& src, int keyBegin, int keyEnd,
                                              Compute&& compute) {
  constexpr int kStageElems = 2 * kKeys * D;
  const int numTiles = keyEnd > keyBegin ? (keyEnd - keyBegin + kKeys - 1) / kKeys : 0;
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < numTiles) {
      bf16* stage = stages + st * kStageElems;
      loadKvTile<D, kKeys, kThreads>(stage, stage + kKeys * D, src, keyBegin + st * kKeys, keyEnd);
    }
    cpAsyncCommit();
  }
  for (int i = 0; i < numTiles; ++i) {
    cpAsyncWait<kStages - 2>();
    __syncthreads();  // tile i landed for all threads; tile i - 1's stage is free
    const int next = i + kStages - 1;
    if (next < numTiles) {
      bf16* stage = stages + (next % kStages) * kStageElems;
      loadKvTile<D, kKeys, kThreads>(stage, stage + kKeys * D, src, keyBegin + next * kKeys, keyEnd);
    }
    cpAsyncCommit();
    const bf16* stage = stages + (i % kStages) * kStageElems;
    compute(stage, stage + kKeys * D, keyBegin + i * kKeys);
  }
  cpAsyncWait<0>();
  __syncthreads();
}

// s[kNt][4] = Q rows [qRow0, qRow0 + 16) . K rows [kRow0, kRow0 + 8 kNt) (log2 units).
// Fragment of s[n]: rows g = lane / 4 (e 0, 1) and g + 8 (e 2, 3), keys 8n + 2 (lane % 4) + (e & 1).
// qLo: the lo tile (kSplit only; unread otherwise).
template <int D, int kNt, bool kSplit = true>
__device__ __forceinline__ void warpScores(float s[kNt][4], const bf16* qHi, const bf16* qLo, int qRow0,
                                           const bf16* kTile, int kRow0) {
  static_assert(kNt % 2 == 0, "key n-tiles come in pairs (one ldmatrix.x4)");
  const int lane = threadIdx.x & 31;
  // Few key tiles (decode): the lo products get their own accumulators, so the dependent
  // MMA chains are D/16 long instead of D/8 (latency, not throughput, bounds that case).
  constexpr int kLoAcc = kNt <= 2 ? kNt : 1;
  float sLo[kLoAcc][4];
#pragma unroll
  for (int n = 0; n < kNt; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
  for (int n = 0; n < kLoAcc; ++n) sLo[n][0] = sLo[n][1] = sLo[n][2] = sLo[n][3] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    uint32_t ah[4], al[4] = {0, 0, 0, 0};
    const int qOff = swizzled<D>(qRow0 + (lane & 15), 2 * ks + (lane >> 4));
    ldmatrixX4(ah, sharedAddress(qHi + qOff));
    if constexpr (kSplit) ldmatrixX4(al, sharedAddress(qLo + qOff));
#pragma unroll
    for (int np = 0; np < kNt / 2; ++np) {
      const int m = lane >> 3;
      uint32_t b[4];
      ldmatrixX4(b, sharedAddress(kTile + swizzled<D>(kRow0 + np * 16 + (m >> 1) * 8 + (lane & 7), 2 * ks + (m & 1))));
      mma16816(s[2 * np], ah, b[0], b[1]);
      mma16816(s[2 * np + 1], ah, b[2], b[3]);
      if constexpr (kSplit && kLoAcc == kNt) {
        mma16816(sLo[2 * np], al, b[0], b[1]);
        mma16816(sLo[2 * np + 1], al, b[2], b[3]);
      } else if constexpr (kSplit) {
        mma16816(s[2 * np], al, b[0], b[1]);
        mma16816(s[2 * np + 1], al, b[2], b[3]);
      }
    }
  }
  if constexpr (kSplit && kLoAcc == kNt) {
#pragma unroll
    for (int n = 0; n < kNt; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] += sLo[n][e];
  }
}

// Online-softmax update of the thread's two rows with masked scores s (-inf = masked),
// then o += P . V rows [vRow0, vRow0 + 8 kNt). m: running max (log2), l: this thread's
// partial row sum (reduce over the 4 lanes of a row at the end).
template <int D, int kNt, bool kSplit = true>
__device__ __forceinline__ void warpSoftmaxPv(float s[kNt][4], float m[2], float l[2], float o[D / 8][4],
                                              const bf16* vTile, int vRow0) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < kNt; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * half], s[n][2 * half + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float mNew = fmaxf(m[half], mx);
    const float base = mNew == -INFINITY ? 0.0f : mNew;  // all masked so far: p = 0, no NaN
    const float alpha = exp2f(m[half] - base);
    m[half] = mNew;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < kNt; ++n) {
#pragma unroll
      for (int e = 2 * half; e < 2 * half + 2; ++e) {
        s[n][e] = exp2f(s[n][e] - base);
        sum += s[n][e];
      }
    }
    l[half] = l[half] * alpha + sum;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][2 * half] *= alpha;
      o[dt][2 * half + 1] *= alpha;
    }
  }
#pragma unroll
  for (int kk = 0; kk < kNt / 2; ++kk) {
    uint32_t ph[4], pl[4];
    splitHiLo(s[2 * kk][0], s[2 * kk][1], ph[0], pl[0]);
    splitHiLo(s[2 * kk][2], s[2 * kk][3], ph[1], pl[1]);
    splitHiLo(s[2 * kk + 1][0], s[2 * kk + 1][1], ph[2], pl[2]);
    splitHiLo(s[2 * kk + 1][2], s[2 * kk + 1][3], ph[3], pl[3]);
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      const int mi = lane >> 3;
      uint32_t b[4];
      ldmatrixX4Trans(b, sharedAddress(vTile + swizzled<D>(vRow0 + kk * 16 + (mi & 1) * 8 + (lane & 7), 2 * dp + (mi >> 1))));
      mma16816(o[2 * dp], ph, b[0], b[1]);
      if constexpr (kSplit) mma16816(o[2 * dp], pl, b[0], b[1]);
      mma16816(o[2 * dp + 1], ph, b[2], b[3]);
      if constexpr (kSplit) mma16816(o[2 * dp + 1], pl, b[2], b[3]);
    }
  }
}

// Row sums of the thread's two rows over the 4 lanes that share them.
__device__ __forceinline__ float quadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

}  // namespace afd::cuda::tc
