#include "cuda/row-ops.h"

#include <cstring>
#include <vector>

#include "core/op-checks.h"
#include "core/op-contracts.h"
#include "cuda/cuda-check.h"
#include "cuda/elementwise.cuh"
#include "cuda/embedding.cuh"
#include "cuda/gather-rows.cuh"
#include "cuda/host-helpers.h"
#include "cuda/norm.cuh"
#include "cuda/sampling.cuh"

namespace afd::cuda {

void RowOps::embedding(const Tensor& ids, const Tensor& table, Tensor& out) {
  const int64_t T = ids.dim(0), H = table.dim(1);
  contract::checkEmbedding(ids, table, out);
  embeddingLookup(ids.ptr<int32_t>(), table.data, code(table.dtype), out.ptr<float>(), static_cast<int>(T),
                  static_cast<int>(H), static_cast<int>(table.dim(0)), ctx_.stream());
}

void RowOps::fillRandom(Tensor& t, uint64_t key, float scale, float offset) {
  contract::checkFloat("fillRandom", "tensor", t);
  fillDummy(t.data, code(t.dtype), static_cast<size_t>(t.numel()), key, scale, offset, ctx_.stream());
}

void RowOps::rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1);
  contract::checkRmsNorm(x, weight, out);
  // With no delta the kernel only reads the residual argument.
  cuda::addRmsNorm(const_cast<float*>(x.ptr<float>()), nullptr, false, weight.data, code(weight.dtype), out.data,
                   out.dtype == DType::BF16, static_cast<int>(T), static_cast<int>(H), eps, ctx_.stream());
}

void RowOps::addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = residual.dim(0), H = residual.dim(1);
  contract::checkAddRmsNorm(delta, residual, weight, out);
  cuda::addRmsNorm(residual.ptr<float>(), delta.data, delta.dtype == DType::BF16, weight.data, code(weight.dtype), out.data,
                   out.dtype == DType::BF16, static_cast<int>(T), static_cast<int>(H), eps, ctx_.stream());
}

void RowOps::add(const Tensor& a, const Tensor& b, Tensor& out) {
  contract::checkAdd(a, b, out);
  if (a.dtype == DType::BF16) addBf16(a.data, b.data, out.data, a.numel(), ctx_.stream());  // DeepSeek's shared experts
  else addF32(a.ptr<float>(), b.ptr<float>(), out.ptr<float>(), a.numel(), ctx_.stream());
}

void RowOps::gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) {
  contract::checkGatherRows(x, rows, out);
  cuda::gatherRows(x.data, rows.ptr<int32_t>(), out.data, static_cast<int>(rows.dim(0)), static_cast<int>(x.dim(1)),
                   static_cast<int>(dtypeBytes(x.dtype)), ctx_.stream());
}

void RowOps::sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) {
  contract::checkShape("sample", "logits", logits, {-1, -1});
  const int S = static_cast<int>(logits.dim(0));
  if (S == 0) return;
  // One upload of the per-row settings: [temperature | topK | topP | seed | position | tokens].
  const size_t rowBytes = 4;
  std::vector<uint8_t> host(6 * rowBytes * S);
  std::memcpy(host.data(), params.temperature, rowBytes * S);
  std::memcpy(host.data() + 1 * rowBytes * S, params.topK, rowBytes * S);
  std::memcpy(host.data() + 2 * rowBytes * S, params.topP, rowBytes * S);
  std::memcpy(host.data() + 3 * rowBytes * S, params.seeds, rowBytes * S);
  std::memcpy(host.data() + 4 * rowBytes * S, params.positions, rowBytes * S);
  uint8_t* dev = static_cast<uint8_t*>(memory_.scratch(host.size()));
  AFD_CUDA_CHECK(cudaMemcpyAsync(dev, host.data(), 5 * rowBytes * S, cudaMemcpyHostToDevice, ctx_.stream()));
  SamplingArgs a;
  a.logits = logits.ptr<float>();
  a.temperature = reinterpret_cast<const float*>(dev);
  a.topK = reinterpret_cast<const int32_t*>(dev + rowBytes * S);
  a.topP = reinterpret_cast<const float*>(dev + 2 * rowBytes * S);
  a.seed = reinterpret_cast<const uint32_t*>(dev + 3 * rowBytes * S);
  a.position = reinterpret_cast<const int32_t*>(dev + 4 * rowBytes * S);
  a.tokens = reinterpret_cast<int32_t*>(dev + 5 * rowBytes * S);
  a.rows = S;
  a.vocab = static_cast<int>(logits.dim(1));
  sampleTokens(a, ctx_.stream());
  memory_.copyToHost(outTokens, a.tokens, rowBytes * S);
}

}  // namespace afd::cuda
