#include "cuda/gemm.cuh"

#include <cuda_bf16.h>

#include <stdexcept>
#include <type_traits>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cublas-api.h"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"
#include "cuda/dtype-load.cuh"

namespace afd::cuda {
namespace {

constexpr int kMaxWarps = 8;    // warps per block (4 or 8); they split k
constexpr int kTokenTiles = 4;  // n-tiles of 8 rows per pass over the weights (32 rows)

__device__ __forceinline__ bool isSilu(Epilogue e) { return e == Epilogue::SiluMulBf16 || e == Epilogue::SiluMulF32; }

__device__ __forceinline__ uint4 loadW(const bf16* row, int col, int k, bool ok) {
  if (ok && col < k) return __ldg(reinterpret_cast<const uint4*>(row + col));
  return make_uint4(0, 0, 0, 0);
}

// 8 activations at [col, col + 8) as bf16 pairs.
__device__ __forceinline__ uint4 loadX(const bf16* row, int col, int k, bool ok) { return loadW(row, col, k, ok); }
// f32 activations are split into bf16 hi + lo parts (x = hi + lo to ~2^-16 relative), so
// two tensor-core products give nearly f32 accuracy at the same weight traffic.
__device__ __forceinline__ void loadXSplit(const float* row, int col, int k, bool ok, uint4& hi, uint4& lo) {
  if (!(ok && col < k)) {
    hi = lo = make_uint4(0, 0, 0, 0);
    return;
  }
  const float4 a = __ldg(reinterpret_cast<const float4*>(row + col));
  const float4 b = __ldg(reinterpret_cast<const float4*>(row + col + 4));
  const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  hi = floatToBf16x8(v);
  float h[8];
  bf16x8ToFloat(hi, h);
  float r[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = v[i] - h[i];
  lo = floatToBf16x8(r);
}

__device__ __forceinline__ void mma16816(float c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t word(const uint4& lo, const uint4& hi, int i) {
  const uint4& v = i < 4 ? lo : hi;
  switch (i & 3) {
    case 0: return v.x;
    case 1: return v.y;
    case 2: return v.z;
    default: return v.w;
  }
}

__device__ __forceinline__ float silu(float v) { return v / (1.0f + __expf(-v)); }

__device__ __forceinline__ void storeOut(const LinearArgs& p, int row, int col, float v) {
  const size_t at = static_cast<size_t>(row) * p.ldOut + col;
  switch (p.epilogue) {
    case Epilogue::StoreBf16:
    case Epilogue::SiluMulBf16: static_cast<bf16*>(p.out)[at] = __float2bfloat16(v); break;
    case Epilogue::StoreF32:
    case Epilogue::SiluMulF32: static_cast<float*>(p.out)[at] = v; break;
    case Epilogue::AccumulateF32: static_cast<float*>(p.out)[at] += v; break;
  }
}

struct GroupView {
  int group;
  int rowBegin;
  int rowEnd;
};

__device__ __forceinline__ bool resolveGroup(const LinearArgs& p, GroupView& v) {
  v.group = blockIdx.y;
  if (p.activeGroups != nullptr) {
    v.group = p.activeGroups[blockIdx.y];
    if (v.group < 0) return false;
  }
  v.rowBegin = 0;
  v.rowEnd = p.rows;
  if (p.groupOffsets != nullptr) {
    v.rowBegin = p.groupOffsets[v.group];
    v.rowEnd = p.groupOffsets[v.group + 1];
  }
  return true;
}

__device__ __forceinline__ const void* groupWeight(const LinearArgs& p, int group, bool up) {
  const void* const* table = up ? p.wUpTable : p.wTable;
  if (table != nullptr) return table[group];
  const void* base = up ? p.wUp : p.w;
  const int bytes = p.wDtype == kDtypeF32 ? 4 : 2;
  return static_cast<const char*>(base) + static_cast<size_t>(group) * p.groupStride * bytes;
}

// Block: 4 or 8 warps splitting k, 16 weight rows (plain: features r0..r0+15; SiLU: gate
// and up rows of features j0..j0+7) x every row of its group, 32 rows per pass. Each
// thread loads 32 contiguous bytes of a weight row per 64-wide k chunk; the k order
// inside a chunk is permuted identically for both operands, so one 16-byte load feeds
// two mma k-steps without shuffles. (Measured on H200: this beat loads of 64 contiguous
// bytes per instruction, and 2 chunks in flight beat 4; docs/benchmarks.md.)
template <typename XT, int kWarps, int kUnroll>  // kUnroll: 64-wide k chunks in flight per warp
__global__ void __launch_bounds__(kWarps * 32) streamGemmKernel(LinearArgs p) {
  pdlWait();
  GroupView gv;
  if (!resolveGroup(p, gv)) return;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const bool siluMode = isSilu(p.epilogue);
  const bf16* wMain = static_cast<const bf16*>(groupWeight(p, gv.group, false));
  int rowA, rowB;
  const bf16* wA;
  const bf16* wB;
  if (siluMode) {
    rowA = rowB = blockIdx.x * 8 + g;
    wA = wMain;
    wB = static_cast<const bf16*>(groupWeight(p, gv.group, true));
  } else {
    rowA = blockIdx.x * 16 + g;
    rowB = rowA + 8;
    wA = wB = wMain;
  }
  const bool okA = rowA < p.n;
  const bool okB = rowB < p.n;
  wA += static_cast<size_t>(okA ? rowA : 0) * p.k;
  wB += static_cast<size_t>(okB ? rowB : 0) * p.k;
  const XT* x = static_cast<const XT*>(p.x);
  const int numChunks = (p.k + 63) / 64;
  __shared__ float partial[kWarps - 1][kTokenTiles * 4][32];

  for (int tok0 = gv.rowBegin; tok0 < gv.rowEnd; tok0 += kTokenTiles * 8) {
    float acc[kTokenTiles][4];
    const XT* xRow[kTokenTiles];
    bool okX[kTokenTiles];
#pragma unroll
    for (int nt = 0; nt < kTokenTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
      const int r = tok0 + nt * 8 + g;
      okX[nt] = r < gv.rowEnd;
      const int src = okX[nt] ? (p.xRowIndex != nullptr ? p.xRowIndex[r] : r) : 0;
      xRow[nt] = x + static_cast<size_t>(src) * p.k;
    }
    for (int c = warp; c < numChunks; c += kWarps * kUnroll) {
      uint4 a[kUnroll][4];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int col = (c + u * kWarps) * 64 + 16 * t;
        const bool live = c + u * kWarps < numChunks;
        a[u][0] = loadW(wA, col, p.k, live && okA);
        a[u][1] = loadW(wA, col + 8, p.k, live && okA);
        a[u][2] = loadW(wB, col, p.k, live && okB);
        a[u][3] = loadW(wB, col + 8, p.k, live && okB);
      }
#pragma unroll
      for (int nt = 0; nt < kTokenTiles; ++nt) {
        if (tok0 + nt * 8 >= gv.rowEnd) break;  // warp-uniform
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (c + u * kWarps >= numChunks) break;
          const int col = (c + u * kWarps) * 64 + 16 * t;
          uint4 b0, b1, r0, r1;  // columns [col, col + 8) and [col + 8, col + 16); r: f32 residuals
          if constexpr (std::is_same_v<XT, float>) {
            loadXSplit(xRow[nt], col, p.k, okX[nt], b0, r0);
            loadXSplit(xRow[nt], col + 8, p.k, okX[nt], b1, r1);
          } else {
            b0 = loadX(xRow[nt], col, p.k, okX[nt]);
            b1 = loadX(xRow[nt], col + 8, p.k, okX[nt]);
          }
#pragma unroll
          for (int s = 0; s < 4; ++s) {
            const uint32_t a0 = word(a[u][0], a[u][1], 2 * s), a1 = word(a[u][2], a[u][3], 2 * s);
            const uint32_t a2 = word(a[u][0], a[u][1], 2 * s + 1), a3 = word(a[u][2], a[u][3], 2 * s + 1);
            mma16816(acc[nt], a0, a1, a2, a3, word(b0, b1, 2 * s), word(b0, b1, 2 * s + 1));
            if constexpr (std::is_same_v<XT, float>) {
              mma16816(acc[nt], a0, a1, a2, a3, word(r0, r1, 2 * s), word(r0, r1, 2 * s + 1));
            }
          }
        }
      }
    }
    if (warp > 0) {
#pragma unroll
      for (int nt = 0; nt < kTokenTiles; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[warp - 1][nt * 4 + i][lane] = acc[nt][i];
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
      for (int nt = 0; nt < kTokenTiles; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int v = 0; v < kWarps - 1; ++v) acc[nt][i] += partial[v][nt * 4 + i][lane];
        const int ra = tok0 + nt * 8 + 2 * t;  // out row of c0/c2; c1/c3 are ra + 1
        const int rb = ra + 1;
        if (siluMode) {
          if (okA && ra < gv.rowEnd) storeOut(p, ra, rowA, silu(acc[nt][0]) * acc[nt][2]);
          if (okA && rb < gv.rowEnd) storeOut(p, rb, rowA, silu(acc[nt][1]) * acc[nt][3]);
        } else {
          if (okA && ra < gv.rowEnd) storeOut(p, ra, rowA, acc[nt][0]);
          if (okA && rb < gv.rowEnd) storeOut(p, rb, rowA, acc[nt][1]);
          if (okB && ra < gv.rowEnd) storeOut(p, ra, rowB, acc[nt][2]);
          if (okB && rb < gv.rowEnd) storeOut(p, rb, rowB, acc[nt][3]);
        }
      }
    }
    __syncthreads();
  }
}

// Any shape and weight dtype: one thread per output feature, rows looped, fp32 exact.
template <typename XT>
__global__ void simpleGemmKernel(LinearArgs p) {
  pdlWait();
  GroupView gv;
  if (!resolveGroup(p, gv)) return;
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= p.n) return;
  const bool siluMode = isSilu(p.epilogue);
  const void* w = groupWeight(p, gv.group, false);
  const void* wUp = silu ? groupWeight(p, gv.group, true) : nullptr;
  const XT* x = static_cast<const XT*>(p.x);
  for (int r = gv.rowBegin; r < gv.rowEnd; ++r) {
    const XT* xr = x + static_cast<size_t>(p.xRowIndex != nullptr ? p.xRowIndex[r] : r) * p.k;
    float a = 0.0f;
    float b = 0.0f;
    for (int i = 0; i < p.k; ++i) {
      const float xv = static_cast<float>(xr[i]);
      a += xv * loadAsFloat(w, p.wDtype, static_cast<size_t>(o) * p.k + i);
      if (siluMode) b += xv * loadAsFloat(wUp, p.wDtype, static_cast<size_t>(o) * p.k + i);
    }
    storeOut(p, r, o, siluMode ? silu(a) * b : a);
  }
}

void validate(const LinearArgs& a, int gridSlots) {
  if (a.x == nullptr || a.out == nullptr || (a.w == nullptr && a.wTable == nullptr)) {
    throw std::invalid_argument("linear: x, w and out must be given");
  }
  const bool silu = a.epilogue == Epilogue::SiluMulBf16 || a.epilogue == Epilogue::SiluMulF32;
  if (silu && a.wUp == nullptr && a.wUpTable == nullptr) throw std::invalid_argument("linear: SiLU needs up weights");
  if (a.n <= 0 || a.k <= 0 || a.rows < 0 || gridSlots <= 0) {
    throw std::invalid_argument("linear: bad shape n=" + std::to_string(a.n) + " k=" + std::to_string(a.k) +
                                " rows=" + std::to_string(a.rows) + " slots=" + std::to_string(gridSlots));
  }
}

template <typename XT>
void launch(const LinearArgs& args, int gridSlots, cudaStream_t stream) {
  const bool silu = args.epilogue == Epilogue::SiluMulBf16 || args.epilogue == Epilogue::SiluMulF32;
  if (args.wDtype == kDtypeBf16 && args.k % 8 == 0) {
    const dim3 grid(silu ? (args.n + 7) / 8 : (args.n + 15) / 16, gridSlots);
    // Few blocks over a long k (o_proj at decode): 8 warps per block keep more loads in flight.
    // Few blocks over a long k (o_proj at decode): 8 warps per block keep more loads in flight.
    const long blocks = static_cast<long>(grid.x) * grid.y;
    if (blocks < 264 && args.k >= 1024) {
      AFD_CUDA_CHECK(launchKernel(streamGemmKernel<XT, kMaxWarps, 2>, grid, kMaxWarps * 32, 0, stream, args));
    } else {
      AFD_CUDA_CHECK(launchKernel(streamGemmKernel<XT, 4, 2>, grid, 4 * 32, 0, stream, args));
    }
    AFD_CUDA_CHECK_LAUNCH("streamGemmKernel");
  } else {
    const dim3 grid((args.n + 127) / 128, gridSlots);
    AFD_CUDA_CHECK(launchKernel(simpleGemmKernel<XT>, grid, 128, 0, stream, args));
    AFD_CUDA_CHECK_LAUNCH("simpleGemmKernel");
  }
}

}  // namespace

void linear(const LinearArgs& args, int gridSlots, const CublasHandle* cublas, cudaStream_t stream) {
  validate(args, gridSlots);
  const bool dense = args.groupOffsets == nullptr && args.activeGroups == nullptr && args.xRowIndex == nullptr &&
                     args.wTable == nullptr;
  if (dense && args.rows == 0) return;
  const bool plain = args.epilogue == Epilogue::StoreBf16 || args.epilogue == Epilogue::StoreF32 ||
                     args.epilogue == Epilogue::AccumulateF32;
  const int decideRows = args.shapeRows > args.rows ? args.shapeRows : args.rows;
  if (dense && plain && !args.xIsF32 && cublas != nullptr && decideRows > kSmallRowsMax && args.wDtype == kDtypeBf16) {
    const bool bf16Out = args.epilogue == Epilogue::StoreBf16;
    cublas->linear(args.x, args.w, args.out, bf16Out ? CUDA_R_16BF : CUDA_R_32F, args.rows, args.n, args.k, args.ldOut,
                   1.0f, args.epilogue == Epilogue::AccumulateF32 ? 1.0f : 0.0f);
    return;
  }
  if (args.xIsF32) {
    launch<float>(args, gridSlots, stream);
  } else {
    launch<bf16>(args, gridSlots, stream);
  }
}

}  // namespace afd::cuda
