// Kernels of the CUDA penalty table (core/logit-ops.h, PenaltySeeds): slot k is a row of
// `vocab` int32 entries (0 = unseen, 1 + c = seen, c times in the output).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// Clears the rows of slots[0..numSlots) and writes each slot's CSR list (device arrays):
// row[ids[e]] = 1 + counts[e].
void seedPenaltyRows(int32_t* table, int64_t vocab, int numSlots, const int32_t* slots, const int32_t* offsets,
                     const int32_t* ids, const int32_t* counts, cudaStream_t stream);
// Row r with slots[r] >= 0 counts its sampled token tokens[r] once more (slots distinct).
void countSampledTokens(int32_t* table, int64_t vocab, int rows, const int32_t* slots, const int32_t* tokens, cudaStream_t stream);

}  // namespace afd::cuda
