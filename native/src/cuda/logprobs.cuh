// Log-probability rows on the GPU (core/logit-ops.h, LogprobRequest): each output row is
// split into chunks of the vocabulary (logprobChunks), one block each computing the chunk's
// max, sum of exponentials, count above the chosen token and top k (k <= kMaxTopLogprobs);
// a second kernel merges a row's chunks (online softmax) into its log-sum-exp, the chosen
// token's rank and its top k. Values are f32 (the CPU backend's are f64): within 1e-5 of it on
// the same logits; ids and ranks equal but where logits tie within f32 rounding.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
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
  // Device room for the chunks' partials, rows x logprobChunks(vocab) of each:
  float* partStats = nullptr;            // [rows, chunks, 3] max, sum, above
  float* partTopV = nullptr;             // [rows, chunks, width - 1]
  int32_t* partTopI = nullptr;           // [rows, chunks, width - 1]
  int chunk = 0;                         // set by logprobRows
};

// Chunks a row of `vocab` logits is split into: about 4096 tokens each, at most 256.
inline int logprobChunks(int vocab) {
  const int c = (vocab + 4095) / 4096;
  return c < 1 ? 1 : (c > 256 ? 256 : c);
}
// Entries of partTopV (and of partTopI) for `rows` output rows of `width` entries.
inline size_t logprobPartialInts(int rows, int width, int vocab) { return static_cast<size_t>(rows) * logprobChunks(vocab) * (width - 1); }

void logprobRows(const LogprobArgs& args, cudaStream_t stream);

}  // namespace afd::cuda
