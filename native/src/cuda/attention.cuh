// Paged attention over the KV cache (decode, and prefill as one query per token),
// split along the sequence (flash-decoding) with the combine done by the last split's
// block, so one launch does the whole op.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace afd::cuda {

struct PagedAttentionArgs {
  const float* q = nullptr;             // [numQueries, numHeads, headDim] f32
  const void* kCache = nullptr;         // [numBlocks, blockSize, numKvHeads, headDim], cacheDtype
  const void* vCache = nullptr;         // same layout
  int cacheDtype = 2;                   // afd::DType code: 0 f32, 1 f16, 2 bf16
  const int32_t* blockTables = nullptr; // [numSeqs, maxBlocksPerSeq]
  const int32_t* querySeq = nullptr;    // [numQueries] sequence of each query; null: query i is sequence i
  const int32_t* positions = nullptr;   // [numQueries] the query sees cache positions [0, position]
  float* out = nullptr;                 // [numQueries, numHeads, headDim] f32
  float* workspace = nullptr;             // attentionWorkspaceBytes(...) bytes, any contents
  int32_t* splitCounters = nullptr;       // [numQueries * numKvHeads], zero before first use; left zero
  int numQueries = 0;
  int numHeads = 0;
  int numKvHeads = 0;  // numHeads / numKvHeads <= 8 for the tiled kernel
  int headDim = 0;     // 64, 128, 256 tiled (split); any other <= 512 on an exact per-head fallback
  int blockSize = 0;
  int maxBlocksPerSeq = 0;
  int numSplits = 1;
  float scale = 1.0f;  // softmax scale, usually headDim^-0.5
};

// Splits so that the grid has about 2 blocks per multiprocessor (1..64).
int attentionSplits(int numQueries, int numKvHeads, int numMultiprocessors);
size_t attentionWorkspaceBytes(int numQueries, int numHeads, int headDim, int numSplits);

void pagedAttention(const PagedAttentionArgs& args, cudaStream_t stream);

}  // namespace afd::cuda
