// The paged KV cache: per layer, K and V of numBlocks blocks of kvBlockSize token slots
// (for MLA models one latent row per slot instead).
// Block ids come from the caller's block tables (the scheduler's block manager); the
// cache itself never allocates blocks.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "model/model-config.h"

namespace afd {

// What the cache holds per token and layer: K and V of numKvHeads x headDim, or (MLA,
// latent) one row of headDim = kv_lora_rank + qk_rope_head_dim and no V.
struct KvLayout {
  int numKvHeads = 0;
  int64_t headDim = 0;
  bool latent = false;
};
KvLayout kvLayoutOf(const ModelConfig& c);
// Which layers have a paged KV cache: every layer but the gdn ones.
std::vector<bool> pagedKvLayers(const ModelConfig& c);

class PagedKvCache {
 public:
  // k/v of layer L: [numBlocks, blockSize, numKvHeads, headDim] of dtype.
  PagedKvCache(Backend& backend, int numLayers, int numBlocks, int blockSize, int numKvHeads, int64_t headDim, DType dtype);
  // Latent layouts: k(L) is [numBlocks, blockSize, headDim] and v(L) is empty.
  PagedKvCache(Backend& backend, int numLayers, int numBlocks, int blockSize, const KvLayout& layout, DType dtype);
  // Only the layers with paged[L] get a cache (gdn layers keep a recurrent state instead);
  // k(L) and v(L) of the others are empty. With shareDir, every tensor lives in one
  // SharedRegion (core/shared-region.h; a CPU backend's file goes in *shareDir), in the
  // transfer layout's order: K then V of each cached layer, each [numBlocks, ...].
  PagedKvCache(Backend& backend, const std::vector<bool>& paged, int numBlocks, int blockSize, const KvLayout& layout,
               DType dtype, const std::string* shareDir = nullptr);

  Tensor& k(int layer) { return k_[layer]; }
  Tensor& v(int layer) { return v_[layer]; }
  int numLayers() const { return static_cast<int>(k_.size()); }
  int numBlocks() const { return numBlocks_; }
  int blockSize() const { return blockSize_; }
  // K + V bytes of one block over the cached layers.
  uint64_t bytesPerBlock() const { return bytesPerBlock_; }
  uint64_t totalBytes() const { return bytesPerBlock_ * static_cast<uint64_t>(numBlocks_); }
  // The region holding every tensor; null unless built with shareDir.
  const SharedRegion* sharedRegion() const { return shared_.get(); }

 private:
  int numBlocks_, blockSize_;
  uint64_t bytesPerBlock_;
  std::vector<Buffer> buffers_;
  std::unique_ptr<SharedRegion> shared_;
  std::vector<Tensor> k_, v_;
};

// Bytes of one block (K + V, or the latent rows, all layers), for sizing numKvBlocks from a memory budget.
uint64_t kvBytesPerBlock(int numLayers, int blockSize, int numKvHeads, int64_t headDim, DType dtype);
uint64_t kvBytesPerBlock(int numLayers, int blockSize, const KvLayout& layout, DType dtype);

}  // namespace afd
