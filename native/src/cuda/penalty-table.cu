#include "cuda/penalty-table.cuh"

#include "core/logit-ops.h"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kChunk = 8192;  // tokens of one block's share of a row

// Block (i, c) zeroes tokens [c * kChunk, ...) of slot i's row.
__global__ void __launch_bounds__(kThreads) clearRowsKernel(int32_t* table, int64_t vocab, const int32_t* slots) {
  pdlWait();
  int32_t* row = table + static_cast<int64_t>(slots[blockIdx.x]) * vocab;
  const int64_t end = min(vocab, static_cast<int64_t>(blockIdx.y + 1) * kChunk);
  for (int64_t t = static_cast<int64_t>(blockIdx.y) * kChunk + threadIdx.x; t < end; t += blockDim.x) row[t] = 0;
}

// Block i writes slot i's list (ids distinct: no two threads write one entry).
__global__ void __launch_bounds__(kThreads) scatterSeedsKernel(int32_t* table, int64_t vocab, const int32_t* slots,
                                                              const int32_t* offsets, const int32_t* ids, const int32_t* counts) {
  pdlWait();
  int32_t* row = table + static_cast<int64_t>(slots[blockIdx.x]) * vocab;
  for (int e = offsets[blockIdx.x] + threadIdx.x; e < offsets[blockIdx.x + 1]; e += blockDim.x) row[ids[e]] = 1 + counts[e];
}

__global__ void __launch_bounds__(kThreads) countSampledKernel(int32_t* table, int64_t vocab, int rows, const int32_t* slots,
                                                              const int32_t* tokens) {
  pdlWait();
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows || slots[r] < 0) return;
  int32_t& e = table[static_cast<int64_t>(slots[r]) * vocab + tokens[r]];
  e = penaltyEntryAfterSample(e);
}

}  // namespace

void seedPenaltyRows(int32_t* table, int64_t vocab, int numSlots, const int32_t* slots, const int32_t* offsets,
                     const int32_t* ids, const int32_t* counts, cudaStream_t stream) {
  if (numSlots <= 0) return;
  const unsigned chunks = static_cast<unsigned>((vocab + kChunk - 1) / kChunk);
  AFD_CUDA_CHECK(launchKernel(clearRowsKernel, dim3(static_cast<unsigned>(numSlots), chunks), dim3(kThreads), 0, stream, table, vocab, slots));
  AFD_CUDA_CHECK_LAUNCH("clearRowsKernel");
  AFD_CUDA_CHECK(launchKernel(scatterSeedsKernel, dim3(static_cast<unsigned>(numSlots)), dim3(kThreads), 0, stream, table, vocab, slots,
                              offsets, ids, counts));
  AFD_CUDA_CHECK_LAUNCH("scatterSeedsKernel");
}

void countSampledTokens(int32_t* table, int64_t vocab, int rows, const int32_t* slots, const int32_t* tokens, cudaStream_t stream) {
  if (rows <= 0) return;
  AFD_CUDA_CHECK(launchKernel(countSampledKernel, dim3(static_cast<unsigned>((rows + kThreads - 1) / kThreads)), dim3(kThreads), 0,
                              stream, table, vocab, rows, slots, tokens));
  AFD_CUDA_CHECK_LAUNCH("countSampledKernel");
}

}  // namespace afd::cuda
