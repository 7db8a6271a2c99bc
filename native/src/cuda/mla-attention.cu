#include "cuda/mla-attention.cuh"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kAbsorbTokens = 8;      // tokens per q-absorption block (one W_UK read serves them)
constexpr int kAbsorbThreads = 128;
constexpr int kAttnThreads = 256;
constexpr int kAttnWarps = kAttnThreads / 32;
constexpr int kLatentPerThread = kMlaMaxLatent / kAttnThreads;  // accumulators per thread and head
constexpr int kCombineThreads = 256;
// Partial rows (token x head x chunk) the chunk cap aims to stay within.
constexpr int64_t kPartialRowsBudget = int64_t{1} << 16;
constexpr size_t kSharedLimit = 48 * 1024;  // no opt-in needed below this

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

// Chunking of one token's context [0, ctx): chunks of chunkLen positions (a multiple of
// kMlaQuantum), at most maxChunks of them, none empty. numChunks = 0 for ctx < 1.
__device__ __forceinline__ void tokenChunks(int ctx, int maxChunks, int& chunkLen, int& numChunks) {
  if (ctx < 1 || maxChunks < 1) {
    chunkLen = 0;
    numChunks = 0;
    return;
  }
  const int quanta = (ctx + kMlaQuantum - 1) / kMlaQuantum;
  const int per = (quanta + maxChunks - 1) / maxChunks;
  chunkLen = per * kMlaQuantum;
  numChunks = (quanta + per - 1) / per;
}

// Heads per attention block so that its shared memory stays below kSharedLimit.
size_t attnSharedPerHead(int width) { return (static_cast<size_t>(width) + kMlaQuantum + 3) * sizeof(float); }
size_t attnSharedFixed() { return kMlaQuantum * sizeof(int32_t); }
int attnHeadTile(int heads, int width) {
  const size_t fit = (kSharedLimit - attnSharedFixed()) / attnSharedPerHead(width);
  return static_cast<int>(std::min<size_t>({static_cast<size_t>(heads), static_cast<size_t>(kMlaMaxHeadTile), fit}));
}

// 1. qLatent[t, h] = [sum_d q[t, h, d] W_UK_h[d, :], q[t, h, nope:]] for a tile of tokens.
__global__ void __launch_bounds__(kAbsorbThreads) mlaAbsorbQKernel(MlaAttentionArgs a) {
  pdlWait();
  __shared__ float qs[kAbsorbTokens][kMlaMaxNope];
  const int t0 = blockIdx.x * kAbsorbTokens;
  const int h = blockIdx.y;
  const int n = min(kAbsorbTokens, a.tokens - t0);
  const int N = a.nope, L = a.latent, width = L + a.rope, qHeadDim = N + a.rope;
  for (int i = threadIdx.x; i < kAbsorbTokens * N; i += blockDim.x) {
    const int j = i / N, d = i - j * N;
    qs[j][d] = j < n ? a.q[(static_cast<size_t>(t0 + j) * a.heads + h) * qHeadDim + d] : 0.0f;
  }
  __syncthreads();
  const size_t wRow0 = static_cast<size_t>(h) * (N + a.value);
  for (int l = threadIdx.x; l < width; l += blockDim.x) {
    if (l < L) {
      float acc[kAbsorbTokens];
#pragma unroll
      for (int j = 0; j < kAbsorbTokens; ++j) acc[j] = 0.0f;
      for (int d = 0; d < N; ++d) {
        const float w = loadAsFloat(a.kvB, a.kvBDtype, (wRow0 + d) * L + l);
#pragma unroll
        for (int j = 0; j < kAbsorbTokens; ++j) acc[j] += qs[j][d] * w;
      }
#pragma unroll
      for (int j = 0; j < kAbsorbTokens; ++j)
        if (j < n) a.qLatent[(static_cast<size_t>(t0 + j) * a.heads + h) * width + l] = acc[j];
    } else {
      for (int j = 0; j < n; ++j)
        a.qLatent[(static_cast<size_t>(t0 + j) * a.heads + h) * width + l] =
            a.q[(static_cast<size_t>(t0 + j) * a.heads + h) * qHeadDim + N + (l - L)];
    }
  }
}

// 2. One block per (token, head tile, chunk): the chunk's positions in sub-tiles of
// kMlaQuantum; scores (one warp per position, all heads of the tile), online softmax
// (one warp per head), latent accumulation (one thread per latent element and head).
__global__ void __launch_bounds__(kAttnThreads) mlaAttentionPartialKernel(MlaAttentionArgs a, int headTile) {
  pdlWait();
  extern __shared__ float smem[];
  const int t = blockIdx.x;
  const int h0 = blockIdx.y * headTile;
  const int ht = min(headTile, a.heads - h0);
  const int chunk = blockIdx.z;
  const int ctx = a.positions[t] + 1;
  int chunkLen = 0, numChunks = 0;
  tokenChunks(ctx, a.maxChunks, chunkLen, numChunks);
  if (chunk >= numChunks) return;  // uniform over the block
  const int L = a.latent, width = L + a.rope;
  float* qs = smem;                             // [headTile][width]
  float* probs = qs + headTile * width;         // [headTile][kMlaQuantum]
  float* alpha = probs + headTile * kMlaQuantum;  // [headTile]
  float* runMax = alpha + headTile;             // [headTile]
  float* runSum = runMax + headTile;            // [headTile]
  int32_t* slots = reinterpret_cast<int32_t*>(runSum + headTile);  // [kMlaQuantum]
  const float* qSrc = a.qLatent + (static_cast<size_t>(t) * a.heads + h0) * width;
  for (int i = threadIdx.x; i < ht * width; i += blockDim.x) qs[i] = qSrc[i];
  for (int h = threadIdx.x; h < ht; h += blockDim.x) {
    runMax[h] = -INFINITY;
    runSum[h] = 0.0f;
  }
  float acc[kLatentPerThread][kMlaMaxHeadTile];
#pragma unroll
  for (int r = 0; r < kLatentPerThread; ++r)
#pragma unroll
    for (int h = 0; h < kMlaMaxHeadTile; ++h) acc[r][h] = 0.0f;
  const int32_t* table = a.blockTables + static_cast<size_t>(a.tokenSeq[t]) * a.maxBlocksPerSeq;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int p0 = chunk * chunkLen;
  const int p1 = min(p0 + chunkLen, ctx);
  __syncthreads();
  for (int s0 = p0; s0 < p1; s0 += kMlaQuantum) {
    const int n = min(kMlaQuantum, p1 - s0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const int p = s0 + i;
      slots[i] = table[p / a.blockSize] * a.blockSize + p % a.blockSize;
    }
    __syncthreads();
    // Scores: probs[h][i] = scale * qLatent[h] . cacheRow(s0 + i).
    for (int i = warp; i < n; i += kAttnWarps) {
      const size_t rowBase = static_cast<size_t>(slots[i]) * width;
      float part[kMlaMaxHeadTile];
#pragma unroll
      for (int h = 0; h < kMlaMaxHeadTile; ++h) part[h] = 0.0f;
      for (int e = lane; e < width; e += 32) {
        const float x = loadAsFloat(a.cache, a.cacheDtype, rowBase + e);
#pragma unroll
        for (int h = 0; h < kMlaMaxHeadTile; ++h)
          if (h < ht) part[h] += x * qs[h * width + e];
      }
#pragma unroll
      for (int h = 0; h < kMlaMaxHeadTile; ++h) {
        if (h < ht) {  // ht is uniform: the whole warp reduces
          const float v = warpSum(part[h]);
          if (lane == 0) probs[h * kMlaQuantum + i] = v * a.scale;
        }
      }
    }
    __syncthreads();
    // Online softmax over this sub-tile, per head.
    for (int h = warp; h < ht; h += kAttnWarps) {
      float* ph = probs + h * kMlaQuantum;
      const float v0 = lane < n ? ph[lane] : -INFINITY;
      const float v1 = lane + 32 < n ? ph[lane + 32] : -INFINITY;
      const float tileMax = warpMax(fmaxf(v0, v1));
      const float mOld = runMax[h];
      const float mNew = fmaxf(mOld, tileMax);
      const float e0 = lane < n ? expf(v0 - mNew) : 0.0f;
      const float e1 = lane + 32 < n ? expf(v1 - mNew) : 0.0f;
      if (lane < n) ph[lane] = e0;
      if (lane + 32 < n) ph[lane + 32] = e1;
      const float tileSum = warpSum(e0 + e1);
      if (lane == 0) {
        const float rescale = expf(mOld - mNew);  // 0 on the first sub-tile (mOld = -inf)
        alpha[h] = rescale;
        runSum[h] = runSum[h] * rescale + tileSum;
        runMax[h] = mNew;
      }
    }
    __syncthreads();
    // Latent accumulation: acc[l][h] = acc[l][h] * alpha[h] + sum_i probs[h][i] c_i[l].
#pragma unroll
    for (int r = 0; r < kLatentPerThread; ++r) {
      const int l = threadIdx.x + r * kAttnThreads;
      if (l < L) {
#pragma unroll
        for (int h = 0; h < kMlaMaxHeadTile; ++h)
          if (h < ht) acc[r][h] *= alpha[h];
        for (int i = 0; i < n; ++i) {
          const float x = loadAsFloat(a.cache, a.cacheDtype, static_cast<size_t>(slots[i]) * width + l);
#pragma unroll
          for (int h = 0; h < kMlaMaxHeadTile; ++h)
            if (h < ht) acc[r][h] += probs[h * kMlaQuantum + i] * x;
        }
      }
    }
    __syncthreads();  // the next sub-tile rewrites slots and probs
  }
  const size_t stride = static_cast<size_t>(L) + 2;
  const size_t rowBase = (static_cast<size_t>(t) * a.heads + h0) * a.gridChunks + chunk;  // + h * gridChunks
#pragma unroll
  for (int r = 0; r < kLatentPerThread; ++r) {
    const int l = threadIdx.x + r * kAttnThreads;
    if (l < L) {
#pragma unroll
      for (int h = 0; h < kMlaMaxHeadTile; ++h)
        if (h < ht) a.partials[(rowBase + static_cast<size_t>(h) * a.gridChunks) * stride + l] = acc[r][h];
    }
  }
  for (int h = threadIdx.x; h < ht; h += blockDim.x) {
    float* dst = a.partials + (rowBase + static_cast<size_t>(h) * a.gridChunks) * stride;
    dst[L] = runMax[h];
    dst[L + 1] = runSum[h];
  }
}

// 3. One block per (token, head): merge the token's chunks into the attended latent
// (shared memory), then out[j] = latent . W_UV_h[j] (one warp per output element).
__global__ void __launch_bounds__(kCombineThreads) mlaCombineKernel(MlaAttentionArgs a) {
  pdlWait();
  extern __shared__ float latent[];  // [L]
  const int t = blockIdx.x;
  const int h = blockIdx.y;
  const int L = a.latent, V = a.value, N = a.nope;
  float* o = a.out + (static_cast<size_t>(t) * a.heads + h) * V;
  int chunkLen = 0, numChunks = 0;
  tokenChunks(a.positions[t] + 1, a.maxChunks, chunkLen, numChunks);
  if (numChunks < 1 || numChunks > a.gridChunks) {
    // A negative position, or a context past the maxContextLen the grid was sized for:
    // a caller bug, made loud.
    for (int j = threadIdx.x; j < V; j += blockDim.x) o[j] = __int_as_float(0x7fc00000);
    return;
  }
  const size_t stride = static_cast<size_t>(L) + 2;
  const float* part = a.partials + (static_cast<size_t>(t) * a.heads + h) * a.gridChunks * stride;
  float m = -INFINITY;
  for (int c = 0; c < numChunks; ++c) m = fmaxf(m, part[c * stride + L]);
  float denom = 0.0f;
  for (int c = 0; c < numChunks; ++c) denom += expf(part[c * stride + L] - m) * part[c * stride + L + 1];
  const float inv = 1.0f / denom;
  for (int l = threadIdx.x; l < L; l += blockDim.x) {
    float v = 0.0f;
    for (int c = 0; c < numChunks; ++c) v += expf(part[c * stride + L] - m) * part[c * stride + l];
    latent[l] = v * inv;
  }
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, numWarps = blockDim.x >> 5;
  const size_t wRow0 = static_cast<size_t>(h) * (N + V) + N;
  for (int j = warp; j < V; j += numWarps) {
    float s = 0.0f;
    for (int l = lane; l < L; l += 32) s += latent[l] * loadAsFloat(a.kvB, a.kvBDtype, (wRow0 + j) * L + l);
    s = warpSum(s);
    if (lane == 0) o[j] = s;
  }
}

}  // namespace

int mlaMaxChunks(int64_t shapeRows, int heads) {
  const int64_t perChunk = std::max<int64_t>(1, shapeRows) * std::max(1, heads);
  return static_cast<int>(std::clamp<int64_t>(kPartialRowsBudget / perChunk, 1, kMlaMaxChunks));
}

int mlaGridChunks(int maxChunks, int maxContextLen) {
  if (maxContextLen <= 0) return maxChunks;
  const int quanta = (maxContextLen + kMlaQuantum - 1) / kMlaQuantum;
  return std::max(1, std::min(maxChunks, quanta));
}

size_t mlaWorkspaceBytes(int tokens, int heads, int latent, int rope, int gridChunks) {
  const size_t rows = static_cast<size_t>(tokens) * static_cast<size_t>(heads);
  return align256(rows * static_cast<size_t>(latent + rope) * sizeof(float)) +
         align256(rows * static_cast<size_t>(gridChunks) * static_cast<size_t>(latent + 2) * sizeof(float));
}

void mlaCarveWorkspace(void* workspace, MlaAttentionArgs& a) {
  const size_t rows = static_cast<size_t>(a.tokens) * static_cast<size_t>(a.heads);
  char* base = static_cast<char*>(workspace);
  a.qLatent = reinterpret_cast<float*>(base);
  a.partials = reinterpret_cast<float*>(base + align256(rows * static_cast<size_t>(a.latent + a.rope) * sizeof(float)));
}

void mlaAttention(const MlaAttentionArgs& a, cudaStream_t stream) {
  if (a.tokens == 0) return;
  const auto fail = [](const std::string& why) { throw std::invalid_argument("mlaAttention on CUDA: " + why); };
  if (a.heads <= 0 || a.latent <= 0 || a.rope <= 0 || a.nope < 0 || a.value <= 0) fail("heads, latent, rope and value dims must be positive");
  if (a.latent > kMlaMaxLatent) fail("kv_lora_rank " + std::to_string(a.latent) + " is above " + std::to_string(kMlaMaxLatent));
  if (a.nope > kMlaMaxNope) fail("qk_nope_head_dim " + std::to_string(a.nope) + " is above " + std::to_string(kMlaMaxNope));
  if (a.blockSize <= 0 || a.maxBlocksPerSeq <= 0) fail("blockSize and maxBlocksPerSeq must be positive");
  if (a.maxChunks < 1 || a.maxChunks > kMlaMaxChunks || a.gridChunks < 1 || a.gridChunks > a.maxChunks) {
    fail("chunk counts out of range (maxChunks " + std::to_string(a.maxChunks) + ", gridChunks " + std::to_string(a.gridChunks) + ")");
  }
  if (a.q == nullptr || a.cache == nullptr || a.kvB == nullptr || a.tokenSeq == nullptr || a.positions == nullptr ||
      a.blockTables == nullptr || a.out == nullptr || a.qLatent == nullptr || a.partials == nullptr) {
    fail("every tensor and workspace must be given");
  }
  const int width = a.latent + a.rope;
  const int headTile = attnHeadTile(a.heads, width);
  if (headTile < 1) fail("a latent row of " + std::to_string(width) + " values does not fit the block's shared memory");
  const unsigned absorbBlocks = static_cast<unsigned>((a.tokens + kAbsorbTokens - 1) / kAbsorbTokens);
  AFD_CUDA_CHECK(launchKernel(mlaAbsorbQKernel, dim3(absorbBlocks, a.heads), dim3(kAbsorbThreads), 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("mlaAbsorbQKernel");
  const unsigned headTiles = static_cast<unsigned>((a.heads + headTile - 1) / headTile);
  const size_t shared = static_cast<size_t>(headTile) * attnSharedPerHead(width) + attnSharedFixed();
  AFD_CUDA_CHECK(launchKernel(mlaAttentionPartialKernel, dim3(a.tokens, headTiles, a.gridChunks), dim3(kAttnThreads), shared,
                              stream, a, headTile));
  AFD_CUDA_CHECK_LAUNCH("mlaAttentionPartialKernel");
  AFD_CUDA_CHECK(launchKernel(mlaCombineKernel, dim3(a.tokens, a.heads), dim3(kCombineThreads),
                              static_cast<size_t>(a.latent) * sizeof(float), stream, a));
  AFD_CUDA_CHECK_LAUNCH("mlaCombineKernel");
}

}  // namespace afd::cuda
