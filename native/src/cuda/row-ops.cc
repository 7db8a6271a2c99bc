#include "cuda/row-ops.h"

#include "core/op-checks.h"
#include "core/op-contracts.h"
#include "cuda/cuda-check.h"
#include "cuda/elementwise.cuh"
#include "cuda/embedding.cuh"
#include "cuda/gather-rows.cuh"
#include "cuda/host-helpers.h"
#include "cuda/norm.cuh"

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

void RowOps::sigmoidGate(const Tensor& x, const Tensor& gate, Tensor& out) {
  contract::checkSigmoidGate(x, gate, out);
  cuda::sigmoidGate(x.data, gate.ptr<float>(), out.data, code(x.dtype), x.dim(0), x.dim(1), gate.dim(1), ctx_.stream());
}

void RowOps::gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) {
  contract::checkGatherRows(x, rows, out);
  cuda::gatherRows(x.data, rows.ptr<int32_t>(), out.data, static_cast<int>(rows.dim(0)), static_cast<int>(x.dim(1)),
                   static_cast<int>(dtypeBytes(x.dtype)), ctx_.stream());
}

}  // namespace afd::cuda
