#include "cuda/mla-attention.cuh"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/attention-tc.cuh"
#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/host-helpers.h"
#include "cuda/launch.cuh"
#include "cuda/mla-absorb.cuh"
#include "cuda/mla-attention-tc.cuh"

namespace afd::cuda {
namespace {

constexpr int kAttnThreads = 256;
constexpr int kAttnWarps = kAttnThreads / 32;
constexpr int kLatentPerThread = kMlaMaxLatent / kAttnThreads;  // accumulators per thread and head
// Partial rows (token x head x chunk) the chunk cap aims to stay within.
constexpr int64_t kPartialRowsBudget = int64_t{1} << 16;

// Shared memory of one attention block: the staged cache sub-tile (kMlaQuantum rows of the
// cache dtype, each rounded up to 16 bytes), then per head its q row, probabilities and
// softmax state, then the sub-tile's slots.
__host__ __device__ inline int cacheElemBytes(int cacheDtype) { return cacheDtype == kDtypeF32 ? 4 : 2; }
__host__ __device__ inline int tileRowBytes(int width, int elemBytes) { return (width * elemBytes + 15) / 16 * 16; }
size_t attnSharedTile(int width, int cacheDtype) {
  return static_cast<size_t>(kMlaQuantum) * tileRowBytes(width, cacheElemBytes(cacheDtype));
}
size_t attnSharedPerHead(int width) { return (static_cast<size_t>(width) + kMlaQuantum + 3) * sizeof(float); }
size_t attnSharedFixed() { return kMlaQuantum * sizeof(int32_t); }
// Heads per attention block so that its shared memory fits the device's opt-in limit.
int attnHeadTile(int heads, int width, int cacheDtype, size_t sharedLimit) {
  const size_t fixed = attnSharedFixed() + attnSharedTile(width, cacheDtype);
  if (fixed >= sharedLimit) return 0;
  const size_t fit = (sharedLimit - fixed) / attnSharedPerHead(width);
  return static_cast<int>(std::min<size_t>({static_cast<size_t>(heads), static_cast<size_t>(kMlaMaxHeadTile), fit}));
}

// Calls f(r, l) for every latent element l < L this thread owns, l = threadIdx.x + r *
// kAttnThreads: the thread's accumulators acc[r][.] are element l's, one per head.
template <typename F>
__device__ __forceinline__ void forOwnLatents(int L, F f) {
#pragma unroll
  for (int r = 0; r < kLatentPerThread; ++r) {
    const int l = threadIdx.x + r * kAttnThreads;
    if (l < L) f(r, l);
  }
}

// 2. One block per (token, head tile, chunk): the chunk's positions in sub-tiles of
// kMlaQuantum; scores (one warp per position, all heads of the tile), online softmax
// (one warp per head), latent accumulation (one thread per latent element and head).
__global__ void __launch_bounds__(kAttnThreads) mlaAttentionPartialKernel(MlaAttentionArgs a, int headTile) {
  pdlWait();
  extern __shared__ uint4 smem[];
  const int t = blockIdx.x;
  const int h0 = blockIdx.y * headTile;
  const int ht = min(headTile, a.heads - h0);
  const int chunk = blockIdx.z;
  const int ctx = a.positions[t] + 1;
  int chunkLen = 0, numChunks = 0;
  mlaTokenChunks(ctx, a.maxChunks, chunkLen, numChunks);
  if (chunk >= numChunks) return;  // uniform over the block
  const int L = a.latent, width = L + a.rope;
  const int elemBytes = cacheElemBytes(a.cacheDtype);
  const int rowBytes = tileRowBytes(width, elemBytes);
  char* tile = reinterpret_cast<char*>(smem);   // [kMlaQuantum][rowBytes] of the cache dtype
  float* qs = reinterpret_cast<float*>(tile + kMlaQuantum * rowBytes);  // [headTile][width]
  float* probs = qs + headTile * width;         // [headTile][kMlaQuantum]
  float* alpha = probs + headTile * kMlaQuantum;  // [headTile]
  float* runMax = alpha + headTile;             // [headTile]
  float* runSum = runMax + headTile;            // [headTile]
  int32_t* slots = reinterpret_cast<int32_t*>(runSum + headTile);  // [kMlaQuantum]
  const float* qSrc = a.qLatent + (static_cast<size_t>(t) * a.heads + h0) * width;
  // Every load of the q tile is issued before the stores (16-byte loads when rows allow).
  if ((width & 3) == 0) {
    const float4* src = reinterpret_cast<const float4*>(qSrc);
#pragma unroll 8
    for (int i = threadIdx.x; i < ht * width / 4; i += blockDim.x) reinterpret_cast<float4*>(qs)[i] = src[i];
  } else {
#pragma unroll 8
    for (int i = threadIdx.x; i < ht * width; i += blockDim.x) qs[i] = qSrc[i];
  }
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
    // Stage the sub-tile's cache rows: every load of the block is issued before any math.
    const char* cacheBytes = static_cast<const char*>(a.cache);
    if ((width * elemBytes) % 16 == 0 && reinterpret_cast<uintptr_t>(a.cache) % 16 == 0) {
      const int per = width * elemBytes / 16;
      for (int idx = threadIdx.x; idx < n * per; idx += blockDim.x) {
        const int i = idx / per, c = idx - i * per;
        reinterpret_cast<uint4*>(tile + i * rowBytes)[c] =
            reinterpret_cast<const uint4*>(cacheBytes + static_cast<size_t>(slots[i]) * width * elemBytes)[c];
      }
    } else {
      for (int idx = threadIdx.x; idx < n * width; idx += blockDim.x) {
        const int i = idx / width, e = idx - i * width;
        const size_t at = static_cast<size_t>(slots[i]) * width + e;
        if (elemBytes == 4) {
          reinterpret_cast<uint32_t*>(tile + i * rowBytes)[e] = reinterpret_cast<const uint32_t*>(cacheBytes)[at];
        } else {
          reinterpret_cast<uint16_t*>(tile + i * rowBytes)[e] = reinterpret_cast<const uint16_t*>(cacheBytes)[at];
        }
      }
    }
    __syncthreads();
    // Scores: probs[h][i] = scale * qLatent[h] . cacheRow(s0 + i).
    for (int i = warp; i < n; i += kAttnWarps) {
      const char* row = tile + i * rowBytes;
      float part[kMlaMaxHeadTile];
#pragma unroll
      for (int h = 0; h < kMlaMaxHeadTile; ++h) part[h] = 0.0f;
      for (int e = lane; e < width; e += 32) {
        const float x = loadAsFloat(row, a.cacheDtype, e);
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
    forOwnLatents(L, [&](int r, int l) {
#pragma unroll
      for (int h = 0; h < kMlaMaxHeadTile; ++h)
        if (h < ht) acc[r][h] *= alpha[h];
      for (int i = 0; i < n; ++i) {
        const float x = loadAsFloat(tile + i * rowBytes, a.cacheDtype, l);
#pragma unroll
        for (int h = 0; h < kMlaMaxHeadTile; ++h)
          if (h < ht) acc[r][h] += probs[h * kMlaQuantum + i] * x;
      }
    });
    __syncthreads();  // the next sub-tile rewrites slots and probs
  }
  const size_t stride = static_cast<size_t>(L) + 2;
  const size_t rowBase = (static_cast<size_t>(t) * a.heads + h0) * a.gridChunks + chunk;  // + h * gridChunks
  forOwnLatents(L, [&](int r, int l) {
#pragma unroll
    for (int h = 0; h < kMlaMaxHeadTile; ++h)
      if (h < ht) a.partials[(rowBase + static_cast<size_t>(h) * a.gridChunks) * stride + l] = acc[r][h];
  });
  for (int h = threadIdx.x; h < ht; h += blockDim.x) {
    float* dst = a.partials + (rowBase + static_cast<size_t>(h) * a.gridChunks) * stride;
    dst[L] = runMax[h];
    dst[L + 1] = runSum[h];
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
  if (a.tensorCores && mlaTensorCoreFits(a)) {
    mlaAbsorbQ(a, stream);
    mlaTensorCorePartials(a, stream);
    mlaLatentOut(a, stream);
    return;
  }
  // The SIMT partials: as many heads per block as the device's shared memory holds.
  const int width = a.latent + a.rope;
  int device = 0, sharedLimit = 0;
  AFD_CUDA_CHECK(cudaGetDevice(&device));
  AFD_CUDA_CHECK(cudaDeviceGetAttribute(&sharedLimit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const int headTile = attnHeadTile(a.heads, width, a.cacheDtype, static_cast<size_t>(sharedLimit));
  if (headTile < 1) fail("a latent row of " + std::to_string(width) + " values does not fit the block's shared memory");
  mlaAbsorbQ(a, stream);
  const unsigned headTiles = static_cast<unsigned>((a.heads + headTile - 1) / headTile);
  const size_t shared = attnSharedTile(width, a.cacheDtype) + static_cast<size_t>(headTile) * attnSharedPerHead(width) +
                        attnSharedFixed();
  static std::atomic<uint64_t> sharedOptIn{0};
  allowDynamicShared(mlaAttentionPartialKernel, static_cast<size_t>(sharedLimit), sharedOptIn);
  AFD_CUDA_CHECK(launchKernel(mlaAttentionPartialKernel, dim3(a.tokens, headTiles, a.gridChunks), dim3(kAttnThreads), shared,
                              stream, a, headTile));
  AFD_CUDA_CHECK_LAUNCH("mlaAttentionPartialKernel");
  mlaLatentOut(a, stream);
}

}  // namespace afd::cuda
