#include "cuda/mla-absorb.cuh"

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Absorb: a block owns kAbsorbTokens tokens, one head and a tile of kColThreads * kVec
// latent columns; its 256 threads are 32 groups of kdRows over the nope rows d.
constexpr int kAbsorbTokens = 8;
constexpr int kColThreads = 8;
constexpr int kRowGroups = kThreads / kColThreads;
constexpr int kRowUnroll = 4;  // weight rows in flight per thread

// Output: a block owns one (token, head) and kOutTile output features, 4 per warp.
constexpr int kOutPerWarp = 4;
constexpr int kOutTile = kWarps * kOutPerWarp;

// kVec consecutive weights at p as f32 (kVec 8: one 16-byte load for 2-byte types, two for f32).
template <typename WT, int kVec>
__device__ __forceinline__ void loadVec(const WT* p, float v[kVec]) {
  if constexpr (kVec == 1) {
    if constexpr (std::is_same_v<WT, float>) {
      v[0] = __ldg(p);
    } else {
      v[0] = static_cast<float>(p[0]);
    }
  } else if constexpr (std::is_same_v<WT, float>) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(p));
    const float4 b = __ldg(reinterpret_cast<const float4*>(p) + 1);
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
  } else if constexpr (std::is_same_v<WT, bf16>) {
    bf16x8ToFloat(__ldg(reinterpret_cast<const uint4*>(p)), v);
  } else {
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(h[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  }
}

template <typename WT, int kVec>
__global__ void __launch_bounds__(kThreads) absorbKernel(MlaAttentionArgs a) {
  pdlWait();
  constexpr int kTileCols = kColThreads * kVec;
  __shared__ float qs[kAbsorbTokens][kMlaMaxNope];
  __shared__ float red[kWarps][kAbsorbTokens][kTileCols];
  const int t0 = blockIdx.x * kAbsorbTokens;
  const int h = blockIdx.y;
  const int n = min(kAbsorbTokens, a.tokens - t0);
  const int N = a.nope, L = a.latent, width = L + a.rope, qHeadDim = N + a.rope;
  const size_t qRow0 = static_cast<size_t>(t0) * a.heads + h;  // + j * heads
  if (static_cast<int>(blockIdx.z) * kTileCols >= L) {  // the last z: the rope part is copied
    for (int i = threadIdx.x; i < n * a.rope; i += blockDim.x) {
      const int j = i / a.rope, r = i - j * a.rope;
      const size_t row = qRow0 + static_cast<size_t>(j) * a.heads;
      a.qLatent[row * width + L + r] = a.q[row * qHeadDim + N + r];
    }
    return;
  }
  const int ct = threadIdx.x % kColThreads, dg = threadIdx.x / kColThreads;
  const int l0 = blockIdx.z * kTileCols + ct * kVec;
  const bool colOk = l0 < L;  // kVec > 1 only when L % kVec == 0
  const WT* w = static_cast<const WT*>(a.kvB) + static_cast<size_t>(h) * (N + a.value) * L + (colOk ? l0 : 0);
  constexpr int kStep = kRowGroups * kRowUnroll;
  float wv[kRowUnroll][kVec];
  const auto loadRows = [&](int d0) {
#pragma unroll
    for (int u = 0; u < kRowUnroll; ++u) {
      const int d = d0 + u * kRowGroups;
      if (colOk && d < N) {
        loadVec<WT, kVec>(w + static_cast<size_t>(d) * L, wv[u]);
      } else {
#pragma unroll
        for (int v = 0; v < kVec; ++v) wv[u][v] = 0.0f;
      }
    }
  };
  loadRows(dg);  // the first weight rows are in flight while q is staged (they do not depend on it)
  for (int i = threadIdx.x; i < kAbsorbTokens * N; i += blockDim.x) {
    const int j = i / N, d = i - j * N;
    qs[j][d] = j < n ? a.q[(qRow0 + static_cast<size_t>(j) * a.heads) * qHeadDim + d] : 0.0f;
  }
  __syncthreads();
  float acc[kAbsorbTokens][kVec];
#pragma unroll
  for (int j = 0; j < kAbsorbTokens; ++j)
#pragma unroll
    for (int v = 0; v < kVec; ++v) acc[j][v] = 0.0f;
  for (int d0 = dg; d0 < N; d0 += kStep) {
    if (d0 != dg) loadRows(d0);
#pragma unroll
    for (int u = 0; u < kRowUnroll; ++u) {
      const int d = min(d0 + u * kRowGroups, N - 1);  // rows past N carry zero weights
#pragma unroll
      for (int j = 0; j < kAbsorbTokens; ++j) {
        const float qv = qs[j][d];
#pragma unroll
        for (int v = 0; v < kVec; ++v) acc[j][v] += qv * wv[u][v];
      }
    }
  }
  // The 4 row groups of a warp (lanes 8 apart), then the 8 warps in order.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int j = 0; j < kAbsorbTokens; ++j)
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      float s = acc[j][v];
      s += __shfl_xor_sync(0xffffffffu, s, 8);
      s += __shfl_xor_sync(0xffffffffu, s, 16);
      if (lane < kColThreads) red[warp][j][ct * kVec + v] = s;
    }
  __syncthreads();
  for (int i = threadIdx.x; i < n * kTileCols; i += blockDim.x) {
    const int j = i / kTileCols, c = i - j * kTileCols;
    const int l = blockIdx.z * kTileCols + c;
    if (l >= L) continue;
    float s = 0.0f;
#pragma unroll
    for (int wi = 0; wi < kWarps; ++wi) s += red[wi][j][c];
    a.qLatent[(qRow0 + static_cast<size_t>(j) * a.heads) * width + l] = s;
  }
}

// Merges the token's chunk partials into latent[] (shared), then out[j] = latent . W_UV_h[j]
// for the block's kOutTile features, every weight row of a warp loaded before it sums.
template <typename WT, int kVec>
__global__ void __launch_bounds__(kThreads) latentOutKernel(MlaAttentionArgs a) {
  pdlWait();
  extern __shared__ float latent[];  // [L]
  __shared__ float chunkScale[kMlaMaxChunks];
  const int t = blockIdx.x;
  const int h = blockIdx.y;
  const int L = a.latent, V = a.value, N = a.nope;
  const int j0 = blockIdx.z * kOutTile;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const WT* wBase = static_cast<const WT*>(a.kvB) + (static_cast<size_t>(h) * (N + V) + N) * L;
  const int jw = j0 + warp * kOutPerWarp;
  float wv[kOutPerWarp][kVec];
  const auto loadRows = [&](int l) {
#pragma unroll
    for (int q = 0; q < kOutPerWarp; ++q) {
      if (jw + q < V && l < L) {
        loadVec<WT, kVec>(wBase + static_cast<size_t>(jw + q) * L + l, wv[q]);
      } else {
#pragma unroll
        for (int v = 0; v < kVec; ++v) wv[q][v] = 0.0f;
      }
    }
  };
  loadRows(lane * kVec);  // the first weights are in flight during the merge (they do not depend on it)
  float* o = a.out + (static_cast<size_t>(t) * a.heads + h) * V;
  int chunkLen = 0, numChunks = 0;
  mlaTokenChunks(a.positions[t] + 1, a.maxChunks, chunkLen, numChunks);
  if (numChunks < 1 || numChunks > a.gridChunks) {
    // A negative position, or a context past the maxContextLen the grid was sized for:
    // a caller bug, made loud.
    for (int j = j0 + threadIdx.x; j < min(V, j0 + kOutTile); j += blockDim.x) o[j] = __int_as_float(0x7fc00000);
    return;
  }
  const size_t stride = static_cast<size_t>(L) + 2;
  const float* part = a.partials + (static_cast<size_t>(t) * a.heads + h) * a.gridChunks * stride;
  if (threadIdx.x < 32) {  // warp 0: chunk c's weight in the merge, lanes over chunks
    static_assert(kMlaMaxChunks <= 64, "two chunks per lane");
    const int c0 = lane, c1 = lane + 32;
    const float m0 = c0 < numChunks ? part[c0 * stride + L] : -INFINITY;
    const float m1 = c1 < numChunks ? part[c1 * stride + L] : -INFINITY;
    const float m = warpMax(fmaxf(m0, m1));
    const float e0 = c0 < numChunks ? expf(m0 - m) : 0.0f;
    const float e1 = c1 < numChunks ? expf(m1 - m) : 0.0f;
    const float s0 = c0 < numChunks ? part[c0 * stride + L + 1] : 0.0f;
    const float s1 = c1 < numChunks ? part[c1 * stride + L + 1] : 0.0f;
    const float inv = 1.0f / warpSum(e0 * s0 + e1 * s1);
    if (c0 < numChunks) chunkScale[c0] = e0 * inv;
    if (c1 < numChunks) chunkScale[c1] = e1 * inv;
  }
  __syncthreads();
  for (int l = threadIdx.x; l < L; l += blockDim.x) {
    float v = 0.0f;
#pragma unroll 8
    for (int c = 0; c < numChunks; ++c) v += chunkScale[c] * part[c * stride + l];
    latent[l] = v;
  }
  __syncthreads();
  float s[kOutPerWarp];
#pragma unroll
  for (int q = 0; q < kOutPerWarp; ++q) s[q] = 0.0f;
  for (int l = lane * kVec; l < L; l += 32 * kVec) {
    if (l != lane * kVec) loadRows(l);
#pragma unroll
    for (int q = 0; q < kOutPerWarp; ++q)
#pragma unroll
      for (int v = 0; v < kVec; ++v) s[q] += wv[q][v] * latent[l + v];
  }
#pragma unroll
  for (int q = 0; q < kOutPerWarp; ++q) {
    const float v = warpSum(s[q]);
    if (lane == 0 && jw + q < V) o[jw + q] = v;
  }
}

// 16-byte vector loads need the latent width to be a multiple of 8 and an aligned base.
bool vectorizable(const MlaAttentionArgs& a) {
  return a.latent % 8 == 0 && reinterpret_cast<uintptr_t>(a.kvB) % 16 == 0;
}

template <typename WT>
void launchAbsorb(const MlaAttentionArgs& a, cudaStream_t stream) {
  const unsigned tokenTiles = static_cast<unsigned>((a.tokens + kAbsorbTokens - 1) / kAbsorbTokens);
  const bool vec = vectorizable(a);
  const int tileCols = kColThreads * (vec ? 8 : 1);
  const dim3 grid(tokenTiles, a.heads, (a.latent + tileCols - 1) / tileCols + 1);
  if (vec) {
    AFD_CUDA_CHECK(launchKernel(absorbKernel<WT, 8>, grid, dim3(kThreads), 0, stream, a));
  } else {
    AFD_CUDA_CHECK(launchKernel(absorbKernel<WT, 1>, grid, dim3(kThreads), 0, stream, a));
  }
  AFD_CUDA_CHECK_LAUNCH("mla absorbKernel");
}

template <typename WT>
void launchOut(const MlaAttentionArgs& a, cudaStream_t stream) {
  const dim3 grid(a.tokens, a.heads, (a.value + kOutTile - 1) / kOutTile);
  const size_t shared = static_cast<size_t>(a.latent) * sizeof(float);
  if (vectorizable(a)) {
    AFD_CUDA_CHECK(launchKernel(latentOutKernel<WT, 8>, grid, dim3(kThreads), shared, stream, a));
  } else {
    AFD_CUDA_CHECK(launchKernel(latentOutKernel<WT, 1>, grid, dim3(kThreads), shared, stream, a));
  }
  AFD_CUDA_CHECK_LAUNCH("mla latentOutKernel");
}

}  // namespace

void mlaAbsorbQ(const MlaAttentionArgs& a, cudaStream_t stream) {
  switch (a.kvBDtype) {
    case kDtypeF32: launchAbsorb<float>(a, stream); break;
    case kDtypeF16: launchAbsorb<__half>(a, stream); break;
    default: launchAbsorb<bf16>(a, stream); break;
  }
}

void mlaLatentOut(const MlaAttentionArgs& a, cudaStream_t stream) {
  switch (a.kvBDtype) {
    case kDtypeF32: launchOut<float>(a, stream); break;
    case kDtypeF16: launchOut<__half>(a, stream); break;
    default: launchOut<bf16>(a, stream); break;
  }
}

}  // namespace afd::cuda
