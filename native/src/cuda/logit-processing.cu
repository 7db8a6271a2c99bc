#include "cuda/logit-processing.cuh"

#include <cmath>
#include <stdexcept>

#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaskChunk = 8192;  // tokens of one block's share of the dense mask pass (a multiple of 32)

__device__ __forceinline__ bool allows(const int32_t* row, int t) { return ((static_cast<uint32_t>(row[t >> 5]) >> (t & 31)) & 1u) != 0; }

// One seen token: the repetition penalty, then frequency and presence.
__device__ __forceinline__ float penalize(float x, int count, float rep, float freq, float pres) {
  x = x > 0.0f ? x / rep : x * rep;
  x -= freq * static_cast<float>(count);
  if (count > 0) x -= pres;
  return x;
}

// Block (r, c): tokens [c * kMaskChunk, ...) of row r that its mask row bans become -inf;
// block (r, 0) also applies the row's bias and seen entries, skipping banned tokens, so
// no element is written by both passes (they need no ordering between blocks).
__global__ void __launch_bounds__(kThreads) logitProcessingKernel(LogitProcessingArgs a) {
  pdlWait();
  const int r = blockIdx.x;
  float* l = a.logits + static_cast<size_t>(r) * a.vocab;
  const int m = a.maskRow != nullptr ? a.maskRow[r] : -1;
  const int32_t* mask = m >= 0 ? a.mask + static_cast<size_t>(m) * a.maskWords : nullptr;
  if (mask != nullptr) {
    // A warp covers 32 consecutive tokens: one mask word (a broadcast load), coalesced stores.
    const int end = min(a.vocab, (static_cast<int>(blockIdx.y) + 1) * kMaskChunk);
    for (int t = blockIdx.y * kMaskChunk + threadIdx.x; t < end; t += blockDim.x)
      if (!allows(mask, t)) l[t] = -INFINITY;
  }
  if (blockIdx.y != 0) return;
  for (int e = a.biasOffsets[r] + threadIdx.x; e < a.biasOffsets[r + 1]; e += blockDim.x)
    if (mask == nullptr || allows(mask, a.biasIds[e])) l[a.biasIds[e]] += a.biasValues[e];
  __syncthreads();  // a token may be both biased and seen: the bias comes first
  const float rep = a.repetition[r], freq = a.frequency[r], pres = a.presence[r];
  for (int e = a.seenOffsets[r] + threadIdx.x; e < a.seenOffsets[r + 1]; e += blockDim.x) {
    const int id = a.seenIds[e];
    if (mask != nullptr && !allows(mask, id)) continue;
    l[id] = penalize(l[id], a.seenCounts[e], rep, freq, pres);
  }
}

// After logitProcessingKernel (the bias comes first): block (r, c) applies the penalties
// of the seen tokens in [c * kMaskChunk, ...) of a row with a penalty slot, reading the
// slot's table row densely (coalesced; 0 = unseen).
__global__ void __launch_bounds__(kThreads) penaltyTableKernel(LogitProcessingArgs a) {
  pdlWait();
  const int r = blockIdx.x;
  const int slot = a.penaltySlot[r];
  if (slot < 0) return;
  float* l = a.logits + static_cast<size_t>(r) * a.vocab;
  const int32_t* seen = a.penaltyTable + static_cast<size_t>(slot) * a.vocab;
  const int m = a.maskRow != nullptr ? a.maskRow[r] : -1;
  const int32_t* mask = m >= 0 ? a.mask + static_cast<size_t>(m) * a.maskWords : nullptr;
  const float rep = a.repetition[r], freq = a.frequency[r], pres = a.presence[r];
  const int end = min(a.vocab, (static_cast<int>(blockIdx.y) + 1) * kMaskChunk);
  for (int t = blockIdx.y * kMaskChunk + threadIdx.x; t < end; t += blockDim.x) {
    const int e = seen[t];
    if (e > 0 && (mask == nullptr || allows(mask, t))) l[t] = penalize(l[t], e - 1, rep, freq, pres);
  }
}

}  // namespace

// One block per row, times the chunks of the dense mask pass when some row has a mask;
// nothing to launch for no rows.
void processLogitRows(const LogitProcessingArgs& a, cudaStream_t stream) {
  if (a.vocab <= 0) throw std::invalid_argument("processLogitRows: vocab must be positive");
  if (a.maskRow != nullptr && a.maskWords != (a.vocab + 31) / 32)
    throw std::invalid_argument("processLogitRows: mask rows must have ceil(vocab / 32) words");
  if (a.rows > 0) {
    const unsigned chunks = a.maskRow != nullptr ? static_cast<unsigned>((a.vocab + kMaskChunk - 1) / kMaskChunk) : 1u;
    AFD_CUDA_CHECK(launchKernel(logitProcessingKernel, dim3(static_cast<unsigned>(a.rows), chunks), dim3(kThreads), 0, stream, a));
    AFD_CUDA_CHECK_LAUNCH("logitProcessingKernel");
    if (a.penaltySlot != nullptr) {
      if (a.penaltyTable == nullptr) throw std::invalid_argument("processLogitRows: rows read penalty slots but no table was given");
      const unsigned tableChunks = static_cast<unsigned>((a.vocab + kMaskChunk - 1) / kMaskChunk);
      AFD_CUDA_CHECK(launchKernel(penaltyTableKernel, dim3(static_cast<unsigned>(a.rows), tableChunks), dim3(kThreads), 0, stream, a));
      AFD_CUDA_CHECK_LAUNCH("penaltyTableKernel");
    }
  }
}

}  // namespace afd::cuda
