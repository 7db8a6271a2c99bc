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

// Output: a block owns kOutTokens tokens of one head and kOutTile output features, 4 per warp.
constexpr int kOutPerWarp = 4;
constexpr int kOutTile = kWarps * kOutPerWarp;
constexpr int kOutTokens = 8;  // tokens per block (one weight read serves them)

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
  for (int i = threadIdx.x; i < kAbsorbTokens * N; i += blockDim.x) {
    const int j = i / N, d = i - j * N;
    qs[j][d] = j < n ? a.q[(qRow0 + static_cast<size_t>(j) * a.heads) * qHeadDim + d] : 0.0f;
  }
  __syncthreads();
  const int ct = threadIdx.x % kColThreads, dg = threadIdx.x / kColThreads;
  const int l0 = blockIdx.z * kTileCols + ct * kVec;
  const bool colOk = l0 < L;  // kVec > 1 only when L % kVec == 0
  const WT* w = static_cast<const WT*>(a.kvB) + static_cast<size_t>(h) * (N + a.value) * L + (colOk ? l0 : 0);
  float acc[kAbsorbTokens][kVec];
#pragma unroll
  for (int j = 0; j < kAbsorbTokens; ++j)
#pragma unroll
    for (int v = 0; v < kVec; ++v) acc[j][v] = 0.0f;
  for (int d0 = dg; d0 < N; d0 += kRowGroups * kRowUnroll) {
    float wv[kRowUnroll][kVec];
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

// Merges each token's chunk partials into latent[token][] (shared), then out[token, h, j] =
// latent . W_UV_h[j] for the block's kOutTile features and kOutTokens tokens: every weight
// row of a warp is loaded once for all the block's tokens.
template <typename WT, int kVec>
__global__ void __launch_bounds__(kThreads) latentOutKernel(MlaAttentionArgs a) {
  pdlWait();
  extern __shared__ float latent[];  // [kOutTokens][L]
  __shared__ float chunkScale[kOutTokens][kMlaMaxChunks];
  __shared__ int chunksOf[kOutTokens];
  const int t0 = blockIdx.x * kOutTokens;
  const int h = blockIdx.y;
  const int n = min(kOutTokens, a.tokens - t0);
  const int L = a.latent, V = a.value, N = a.nope;
  const int j0 = blockIdx.z * kOutTile;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t stride = static_cast<size_t>(L) + 2;
  const auto partialsOf = [&](int j) {
    return a.partials + (static_cast<size_t>(t0 + j) * a.heads + h) * a.gridChunks * stride;
  };
  static_assert(kOutTokens <= kWarps, "one warp per token merges its chunk weights");
  if (warp < n) {  // chunk c's weight in the merge of token t0 + warp, lanes over chunks
    static_assert(kMlaMaxChunks <= 64, "two chunks per lane");
    int chunkLen = 0, numChunks = 0;
    mlaTokenChunks(a.positions[t0 + warp] + 1, a.maxChunks, chunkLen, numChunks);
    if (numChunks < 1 || numChunks > a.gridChunks) numChunks = 0;  // a caller bug: NaN out below
    const float* part = partialsOf(warp);
    const int c0 = lane, c1 = lane + 32;
    const float m0 = c0 < numChunks ? part[c0 * stride + L] : -INFINITY;
    const float m1 = c1 < numChunks ? part[c1 * stride + L] : -INFINITY;
    const float m = warpMax(fmaxf(m0, m1));
    const float e0 = c0 < numChunks ? expf(m0 - m) : 0.0f;
    const float e1 = c1 < numChunks ? expf(m1 - m) : 0.0f;
    const float s0 = c0 < numChunks ? part[c0 * stride + L + 1] : 0.0f;
    const float s1 = c1 < numChunks ? part[c1 * stride + L + 1] : 0.0f;
    const float inv = 1.0f / warpSum(e0 * s0 + e1 * s1);
    if (c0 < numChunks) chunkScale[warp][c0] = e0 * inv;
    if (c1 < numChunks) chunkScale[warp][c1] = e1 * inv;
    if (lane == 0) chunksOf[warp] = numChunks;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < n * L; idx += blockDim.x) {
    const int j = idx / L, l = idx - j * L;
    const float* part = partialsOf(j);
    const int numChunks = chunksOf[j];
    float v = numChunks == 0 ? __int_as_float(0x7fc00000) : 0.0f;
#pragma unroll 8
    for (int c = 0; c < numChunks; ++c) v += chunkScale[j][c] * part[c * stride + l];
    latent[j * L + l] = v;
  }
  __syncthreads();
  const WT* wBase = static_cast<const WT*>(a.kvB) + (static_cast<size_t>(h) * (N + V) + N) * L;
  const int jw = j0 + warp * kOutPerWarp;
  float s[kOutPerWarp][kOutTokens];
#pragma unroll
  for (int q = 0; q < kOutPerWarp; ++q)
#pragma unroll
    for (int j = 0; j < kOutTokens; ++j) s[q][j] = 0.0f;
#pragma unroll 2
  for (int l = lane * kVec; l < L; l += 32 * kVec) {
    float wv[kOutPerWarp][kVec];
#pragma unroll
    for (int q = 0; q < kOutPerWarp; ++q) {
      if (jw + q < V) {
        loadVec<WT, kVec>(wBase + static_cast<size_t>(jw + q) * L + l, wv[q]);
      } else {
#pragma unroll
        for (int v = 0; v < kVec; ++v) wv[q][v] = 0.0f;
      }
    }
#pragma unroll
    for (int j = 0; j < kOutTokens; ++j) {
      if (j >= n) break;
#pragma unroll
      for (int q = 0; q < kOutPerWarp; ++q)
#pragma unroll
        for (int v = 0; v < kVec; ++v) s[q][j] += wv[q][v] * latent[j * L + l + v];
    }
  }
#pragma unroll
  for (int j = 0; j < kOutTokens; ++j) {
    if (j >= n) break;
    float* o = a.out + (static_cast<size_t>(t0 + j) * a.heads + h) * V;
#pragma unroll
    for (int q = 0; q < kOutPerWarp; ++q) {
      const float v = warpSum(s[q][j]);
      if (lane == 0 && jw + q < V) o[jw + q] = v;
    }
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
  const dim3 grid((a.tokens + kOutTokens - 1) / kOutTokens, a.heads, (a.value + kOutTile - 1) / kOutTile);
  const size_t shared = static_cast<size_t>(kOutTokens) * a.latent * sizeof(float);
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
