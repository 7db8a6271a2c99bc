// Log-probability rows on the GPU (core/logit-ops.h, LogprobRequest): one block per
// output row computes the row's max, log-sum-exp and the chosen token's rank, and its
// top k (k <= kMaxTopLogprobs) by a per-thread sorted list merged over the block in k
// rounds of arg-max. Values are f32 (the CPU backend's are f64): within 1e-5 of it on
// the same logits; ids and ranks equal but where logits tie within f32 rounding.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

struct LogprobArgs {
  const float* logits = nullptr;         // [logitRows, vocab] f32
  int vocab = 0;
  int rows = 0;                          // output rows
  int width = 1;                         // entries per output row
  const int32_t* rowOf = nullptr;        // [rows] logits row of each output row; null = row j
  const int32_t* topK = nullptr;         // [rows] in [0, kMaxTopLogprobs], < width
  const int32_t* targets = nullptr;      // [rows] chosen tokens; null: sampledTokens[rowOf[j]]
  const int32_t* sampledTokens = nullptr;  // [logitRows] the tokens sampleTokens drew (when targets is null)
  const float* temperature = nullptr;    // [rows]; null = 1 (0 counts as 1)
  int32_t* outIds = nullptr;             // [rows, width]
  float* outLogprobs = nullptr;          // [rows, width]
  int32_t* outRanks = nullptr;           // [rows]
};

void logprobRows(const LogprobArgs& args, cudaStream_t stream);

}  // namespace afd::cuda
