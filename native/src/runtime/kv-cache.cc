#include "runtime/kv-cache.h"

namespace afd {

uint64_t kvBytesPerBlock(int numLayers, int blockSize, int numKvHeads, int64_t headDim, DType dtype) {
  return 2ull * numLayers * blockSize * numKvHeads * static_cast<uint64_t>(headDim) * dtypeBytes(dtype);
}

PagedKvCache::PagedKvCache(Backend& backend, int numLayers, int numBlocks, int blockSize, int numKvHeads,
                           int64_t headDim, DType dtype)
    : numBlocks_(numBlocks), blockSize_(blockSize),
      bytesPerBlock_(kvBytesPerBlock(numLayers, blockSize, numKvHeads, headDim, dtype)) {
  AFD_CHECK(numBlocks > 0, "numKvBlocks must be positive (got " << numBlocks << ")");
  AFD_CHECK(blockSize > 0 && blockSize <= 1024, "kvBlockSize must be in [1, 1024] (got " << blockSize << ")");
  AFD_CHECK(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16, "KV cache dtype must be f32, bf16 or f16");
  for (int L = 0; L < numLayers; ++L) {
    for (int kv = 0; kv < 2; ++kv) {
      Buffer buf(&backend, bytesPerBlock_ / numLayers / 2 * numBlocks);
      backend.fillZero(buf.data(), buf.bytes());
      Tensor t = buf.view(dtype, {numBlocks, blockSize, numKvHeads, headDim});
      (kv == 0 ? k_ : v_).push_back(t);
      buffers_.push_back(std::move(buf));
    }
  }
}

}  // namespace afd
