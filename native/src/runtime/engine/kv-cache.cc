#include "runtime/engine/kv-cache.h"

#include <algorithm>

namespace afd {

KvLayout kvLayoutOf(const ModelConfig& c) {
  // Every cached layer has the same attention kind (validateModelConfig): mla caches one latent row per token.
  for (const LayerKinds& k : c.layers) {
    if (k.attention == AttentionKind::Gdn) continue;
    if (k.attention == AttentionKind::Mla) return KvLayout{1, c.mla.latentRowDim(), true};
    break;
  }
  return KvLayout{c.numKvHeads, c.headDim, false};
}

std::vector<bool> pagedKvLayers(const ModelConfig& c) {
  std::vector<bool> paged;
  for (const LayerKinds& k : c.layers) paged.push_back(k.attention != AttentionKind::Gdn);
  return paged;
}

uint64_t kvBytesPerBlock(int numLayers, int blockSize, const KvLayout& layout, DType dtype) {
  const uint64_t perLayer = static_cast<uint64_t>(blockSize) * layout.numKvHeads * static_cast<uint64_t>(layout.headDim) * dtypeBytes(dtype);
  return static_cast<uint64_t>(numLayers) * perLayer * (layout.latent ? 1 : 2);
}

uint64_t kvBytesPerBlock(int numLayers, int blockSize, int numKvHeads, int64_t headDim, DType dtype) {
  return kvBytesPerBlock(numLayers, blockSize, KvLayout{numKvHeads, headDim, false}, dtype);
}

PagedKvCache::PagedKvCache(Backend& backend, int numLayers, int numBlocks, int blockSize, int numKvHeads,
                           int64_t headDim, DType dtype)
    : PagedKvCache(backend, numLayers, numBlocks, blockSize, KvLayout{numKvHeads, headDim, false}, dtype) {}

PagedKvCache::PagedKvCache(Backend& backend, int numLayers, int numBlocks, int blockSize, const KvLayout& layout,
                           DType dtype)
    : PagedKvCache(backend, std::vector<bool>(static_cast<size_t>(numLayers), true), numBlocks, blockSize, layout, dtype) {}

PagedKvCache::PagedKvCache(Backend& backend, const std::vector<bool>& paged, int numBlocks, int blockSize,
                           const KvLayout& layout, DType dtype, const std::string* shareDir)
    : numBlocks_(numBlocks),
      blockSize_(blockSize),
      bytesPerBlock_(kvBytesPerBlock(static_cast<int>(std::count(paged.begin(), paged.end(), true)), blockSize, layout, dtype)) {
  AFD_CHECK(numBlocks > 0, "numKvBlocks must be positive (got " << numBlocks << ")");
  AFD_CHECK(blockSize > 0 && blockSize <= 1024, "kvBlockSize must be in [1, 1024] (got " << blockSize << ")");
  AFD_CHECK(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16, "KV cache dtype must be f32, bf16 or f16");
  const int tensorsPerLayer = layout.latent ? 1 : 2;
  const size_t bytesPerTensor = static_cast<size_t>(kvBytesPerBlock(1, blockSize, layout, dtype)) / tensorsPerLayer * numBlocks;
  const size_t numTensors = static_cast<size_t>(std::count(paged.begin(), paged.end(), true)) * tensorsPerLayer;
  if (shareDir && numTensors > 0) shared_ = backend.allocateShared(numTensors * bytesPerTensor, *shareDir);
  size_t next = 0;  // tensors carved from shared_ so far
  // Storage of the next tensor: its slice of the shared region (zeroed), or a buffer of its own.
  auto storage = [&]() -> void* {
    if (shared_) return static_cast<uint8_t*>(shared_->data()) + bytesPerTensor * next++;
    Buffer buf(&backend, bytesPerTensor);
    backend.fillZero(buf.data(), buf.bytes());
    buffers_.push_back(std::move(buf));
    return buffers_.back().data();
  };
  const Device device = backend.device();
  for (bool cached : paged) {
    if (!cached) {
      k_.push_back(Tensor{});
      v_.push_back(Tensor{});
      continue;
    }
    for (int kv = 0; kv < tensorsPerLayer; ++kv) {
      void* data = storage();
      Tensor t = layout.latent ? Tensor(data, dtype, {numBlocks, blockSize, layout.headDim}, device)
                               : Tensor(data, dtype, {numBlocks, blockSize, layout.numKvHeads, layout.headDim}, device);
      (kv == 0 ? k_ : v_).push_back(t);
    }
    if (layout.latent) v_.push_back(Tensor{});
  }
}

}  // namespace afd
