// MLA attention over the paged latent cache on CUDA, absorbed for every token (decode and
// prefill alike: the math of the expanded K / V, in the latent space):
//   1. qLatent[t, h] = [q_nope[t, h] W_UK_h, q_pe[t, h]]                 [T, nH, L + R]
//   2. per (token, head tile, chunk of the context): scores against the cache rows,
//      online softmax over sub-tiles of kMlaQuantum positions, the attended latent
//      sum_p p(p) c(p) with its running max and sum                       partials
//   3. per (token, head): the chunks merged, then out = latent W_UV_h^T   [T, nH, V]
// Each token's chunking depends only on its own context length and maxChunks (chosen
// for the step's rows, Backend::setStepRows), never on the other tokens of the call, so
// a DBO stage computes every token bit for bit as the whole step does.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace afd::cuda {

constexpr int kMlaQuantum = 64;        // positions per sub-tile and chunk granularity
constexpr int kMlaMaxChunks = 64;      // chunks per token at most
constexpr int kMlaMaxLatent = 1024;    // kv_lora_rank limit (register accumulators)
constexpr int kMlaMaxNope = 512;       // qk_nope_head_dim limit (shared q tile)
constexpr int kMlaMaxHeadTile = 16;    // heads per attention block

struct MlaAttentionArgs {
  const float* q = nullptr;           // [tokens, heads, nope + rope] f32 (roped)
  const void* cache = nullptr;        // [numBlocks, blockSize, latent + rope] of cacheDtype
  int cacheDtype = 2;
  const void* kvB = nullptr;          // [heads * (nope + value), latent] of kvBDtype
  int kvBDtype = 2;
  const int32_t* tokenSeq = nullptr;  // [tokens]
  const int32_t* positions = nullptr; // [tokens]
  const int32_t* blockTables = nullptr;  // [numSeqs, maxBlocksPerSeq]
  float* out = nullptr;               // [tokens, heads, value] f32
  float* qLatent = nullptr;           // workspace [tokens, heads, latent + rope] f32
  float* partials = nullptr;          // workspace [tokens, heads, gridChunks, latent + 2] f32
  int tokens = 0;
  int heads = 0;
  int latent = 0;
  int rope = 0;
  int nope = 0;
  int value = 0;
  int blockSize = 0;
  int maxBlocksPerSeq = 0;
  int maxChunks = 1;   // per-token chunk cap (mlaMaxChunks)
  int gridChunks = 1;  // chunks in the grid (mlaGridChunks); must cover every token's chunks
  float scale = 1.0f;
  bool tensorCores = true;  // step 2 on the tensor cores where the shape fits (mla-attention-tc.cuh)
};

// Chunk cap per token for a step of `shapeRows` rows: many rows split less (the partials
// stay within a fixed budget), few rows split long contexts up to kMlaMaxChunks ways.
int mlaMaxChunks(int64_t shapeRows, int heads);
// Chunks the grid must hold for contexts up to maxContextLen (0 = unknown: maxChunks).
int mlaGridChunks(int maxChunks, int maxContextLen);
// Bytes of the two workspaces (qLatent, then partials, each 256-byte aligned).
size_t mlaWorkspaceBytes(int tokens, int heads, int latent, int rope, int gridChunks);
// Splits one workspace of mlaWorkspaceBytes into a.qLatent and a.partials.
void mlaCarveWorkspace(void* workspace, MlaAttentionArgs& a);

// Throws std::invalid_argument naming a limit the shapes exceed.
void mlaAttention(const MlaAttentionArgs& args, cudaStream_t stream);

}  // namespace afd::cuda
