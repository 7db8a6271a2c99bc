// The paged KV cache: per layer, K and V of numBlocks blocks of kvBlockSize token slots.
// Block ids come from the caller's block tables (the scheduler's block manager); the
// cache itself never allocates blocks.
#pragma once
#include <vector>

#include "core/backend.h"

namespace afd {

class PagedKvCache {
 public:
  // k/v of layer L: [numBlocks, blockSize, numKvHeads, headDim] of dtype.
  PagedKvCache(Backend& backend, int numLayers, int numBlocks, int blockSize, int numKvHeads, int64_t headDim, DType dtype);

  Tensor& k(int layer) { return k_[layer]; }
  Tensor& v(int layer) { return v_[layer]; }
  int numBlocks() const { return numBlocks_; }
  int blockSize() const { return blockSize_; }
  // K + V bytes of one block over all layers.
  uint64_t bytesPerBlock() const { return bytesPerBlock_; }
  uint64_t totalBytes() const { return bytesPerBlock_ * static_cast<uint64_t>(numBlocks_); }

 private:
  int numBlocks_, blockSize_;
  uint64_t bytesPerBlock_;
  std::vector<Buffer> buffers_;
  std::vector<Tensor> k_, v_;
};

// Bytes of one block (K + V, all layers), for sizing numKvBlocks from a memory budget.
uint64_t kvBytesPerBlock(int numLayers, int blockSize, int numKvHeads, int64_t headDim, DType dtype);

}  // namespace afd
