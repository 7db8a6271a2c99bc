// Paged attention over the KV cache. Two kernel families behind one entry point:
// - SIMT (attention.cu): one query per token on CUDA cores, split along the sequence
//   (flash-decoding) with the combine done by the last split's block; any dtype/shape.
// - Tensor cores (attention-tc-decode.cu, attention-tc-prefill.cu): bf16 cache, headDim 64/128/256, <= 16 q heads per kv
//   head; mma.sync m16n8k16 with f32 q and probabilities split into bf16 hi + lo.
//   Decode: the GQA group's heads are the MMA rows, warps split each key tile, same
//   split/combine as SIMT. Prefill: tiles of consecutive query tokens x the GQA group.
// Dispatch: PagedAttentionArgs::kernel, else the backend's CudaOptions.attentionKernel
// (simt|tc|auto, core/backend-options.h) as resolveAttentionKernel's preference;
// auto = tensor cores for prefill (maxQueryLen > 1) and for decode batches of at least
// kTensorCoreMinDecodeQueries (1) queries where supported, SIMT otherwise; tc = tensor cores
// wherever supported (any batch), SIMT for the rest; simt = the CUDA-core kernels only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/backend-options.h"

namespace afd::cuda {

// Which kernel family runs the op: afd::AttentionKernel (core/backend-options.h).

// Pure decode batches with fewer queries stay on the SIMT kernel in auto mode. Measured on
// one H200 (Qwen3-30B-A3B shape, context 1024, fused decoder in a graph, 2026-11-30): the
// tensor-core kernel is faster at every batch size, batch 1 included (4.31 vs 4.69 ms per
// step; 8: 10.76 vs 11.10; 64: 21.88 vs 24.76), so auto takes it from one query on.
inline constexpr int kTensorCoreMinDecodeQueries = 1;

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
  int numKvHeads = 0;  // group numHeads / numKvHeads: <= 8 SIMT tiled (else per-head), <= 16 tensor cores
  int headDim = 0;     // 64, 128, 256 tiled (split); any other <= 512 on an exact per-head fallback
  int blockSize = 0;
  int maxBlocksPerSeq = 0;
  int numSplits = 1;
  float scale = 1.0f;  // softmax scale, usually headDim^-0.5
  // Longest run of consecutive query tokens of one sequence (1 = pure decode). A hint for
  // the kernel choice only: > 1 selects the tiled prefill kernel, which is exact for any
  // querySeq/positions (tiles split at sequence changes); 1 runs every query on its own.
  int maxQueryLen = 1;
  // Rows of blockTables (sequences) in the batch; 0 = unknown. Bounds the prefill grid's
  // run slots per tile (see attention-tc-prefill.cu); never read as an index.
  int numSeqs = 0;
  AttentionKernel kernel = AttentionKernel::Auto;  // per-call choice; Auto: the preference, else the rule
  // Operand rounding of the tensor-core prefill kernel (CudaOptions.attentionPrecision);
  // decode and SIMT ignore it.
  AttentionPrecision precision = AttentionPrecision::Split;
};

// Splits so that the grid has about blocksPerSm (CudaOptions.attentionBlocksPerSm, default
// 1) blocks per multiprocessor (1..64 splits).
int attentionSplits(int numQueries, int numKvHeads, int numMultiprocessors, int blocksPerSm);
size_t attentionWorkspaceBytes(int numQueries, int numHeads, int headDim, int numSplits);

// Runs resolveAttentionKernel(args, Auto): callers with a preference resolve args.kernel first.
void pagedAttention(const PagedAttentionArgs& args, cudaStream_t stream);

// The family for args: Simt or TensorCore (never Auto). args.kernel when it is not Auto
// (throws where TensorCore names a shape the tensor-core kernels do not cover); else,
// where the tensor cores fit, `preference` when it is not Auto, else the batch-size rule;
// SIMT where they do not fit.
AttentionKernel resolveAttentionKernel(const PagedAttentionArgs& args, AttentionKernel preference);

}  // namespace afd::cuda
