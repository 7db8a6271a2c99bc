// Token embedding lookup. The table is read in its checkpoint dtype (afd::DType code:
// 0 f32, 1 f16, 2 bf16).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// ids: [rows] i32; table: [vocab, hidden]; out: [rows, hidden] f32.
// Ids outside [0, vocab) give NaN rows (the host validates ids; NaN makes a bug loud).
void embeddingLookup(const int32_t* ids, const void* table, int tableDtype, float* out, int rows, int hidden, int vocab,
                     cudaStream_t stream);

}  // namespace afd::cuda
