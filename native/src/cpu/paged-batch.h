// Validation of an AttentionBatch against a paged cache, shared by the paged attention
// ops (GQA and MLA): every token's sequence, position and block ids must be in range.
#pragma once
#include <algorithm>

#include "core/backend.h"

namespace afd::cpu {

// Returns the longest context (max positions[t] + 1) of the T tokens.
inline int64_t checkPagedBatch(const char* op, const AttentionBatch& batch, int64_t T, int64_t numBlocks, int64_t B) {
  const int32_t* tokenSeq = batch.tokenSeq.ptr<int32_t>();
  const int32_t* positions = batch.positions.ptr<int32_t>();
  const int32_t* tables = batch.blockTables.ptr<int32_t>();
  int64_t maxCtx = 0;
  for (int64_t t = 0; t < T; ++t) {
    AFD_CHECK(tokenSeq[t] >= 0 && tokenSeq[t] < batch.numSeqs, op << ": token " << t << " names sequence " << tokenSeq[t]);
    AFD_CHECK(positions[t] >= 0 && (positions[t] / B) < batch.maxBlocksPerSeq,
              op << ": position " << positions[t] << " of token " << t << " needs more than " << batch.maxBlocksPerSeq
                 << " blocks of " << B);
    for (int64_t j = 0; j <= positions[t] / B; ++j) {
      const int32_t blk = tables[tokenSeq[t] * batch.maxBlocksPerSeq + j];
      AFD_CHECK(blk >= 0 && blk < numBlocks, op << ": block id " << blk << " (sequence " << tokenSeq[t] << ", slot " << j
                                                << ") is outside [0, " << numBlocks << ")");
    }
    maxCtx = std::max<int64_t>(maxCtx, positions[t] + 1);
  }
  return maxCtx;
}

}  // namespace afd::cpu
