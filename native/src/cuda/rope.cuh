// Per-head q/k RMSNorm (Qwen3) fused with rotary embedding (rotate-half), and the KV
// cache write. One kernel serves the backend's separate ops and the fused decode path
// (q/k/v read straight out of the QKV projection, k/v written into the paged cache).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

struct QkNormRopeArgs {
  // Inputs, f32: row t of q / k / v heads starts at {q,k,v}In + t * {q,k,v}RowStride.
  const float* qIn = nullptr;
  const float* kIn = nullptr;
  const float* vIn = nullptr;  // only for the cache write; may be null
  int64_t qRowStride = 0;
  int64_t kRowStride = 0;
  int64_t vRowStride = 0;
  float* qOut = nullptr;  // [rows, numHeads, headDim] f32 (may alias qIn)
  float* kOut = nullptr;  // [rows, numKvHeads, headDim] f32 (may alias kIn) or null
  const void* qNorm = nullptr;  // [headDim], normDtype; null = no q norm
  const void* kNorm = nullptr;  // [headDim]; null = no k norm
  int normDtype = 2;
  const float* invFreq = nullptr;  // [rotaryDim / 2] f32
  int rotaryDim = 0;               // dims of each head RoPE rotates (even, <= headDim; 0 = headDim); the rest pass through
  float attentionScale = 1.0f;     // multiplies cos and sin
  const int32_t* positions = nullptr;  // [rows]
  // Cache write (optional): slot = slotMapping[t] (< 0 skips);
  // caches [numBlocks, blockSize, numKvHeads, headDim] of cacheDtype.
  const int32_t* slotMapping = nullptr;
  void* kCache = nullptr;
  void* vCache = nullptr;
  int cacheDtype = 2;
  int rows = 0;
  int numHeads = 0;
  int numKvHeads = 0;
  int headDim = 0;  // even, <= 512
  float eps = 1e-6f;
};

void qkNormRope(const QkNormRopeArgs& args, cudaStream_t stream);

// Cache write alone: k, v [rows, numKvHeads, headDim] f32 -> caches at slotMapping.
void writeKvCache(const float* k, const float* v, const int32_t* slotMapping, void* kCache, void* vCache,
                  int cacheDtype, int rows, int numKvHeads, int headDim, cudaStream_t stream);

}  // namespace afd::cuda
