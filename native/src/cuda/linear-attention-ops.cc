#include "cuda/linear-attention-ops.h"

#include <climits>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "core/debug-env.h"
#include "core/linear-attention-contracts.h"
#include "cuda/host-helpers.h"
#include "cuda/linear-attention.cuh"

namespace afd::cuda {
namespace {

void checkF32(const char* op, std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  for (const auto& [what, t] : tensors) contract::checkDType(op, what, *t, DType::F32);
}

// The batch's shapes, and what the grid can hold (sequences are its y dimension).
LinearBatchArgs batchArgs(const char* op, const LinearAttentionBatch& batch, int64_t T) {
  contract::checkLinearBatchShapes(op, batch);
  AFD_CHECK(batch.numSeqs <= 65535, op << ": " << batch.numSeqs << " sequences in one batch; the CUDA kernels take 65535");
  AFD_CHECK(T < INT_MAX, op << ": " << T << " tokens do not fit the kernels' int offsets");
  return LinearBatchArgs{batch.seqStarts.ptr<int32_t>(), batch.stateSlots.ptr<int32_t>(), batch.hasState.ptr<int32_t>(),
                         batch.numSeqs};
}

}  // namespace

void LinearAttentionOps::causalConv1d(const Tensor& x, const Tensor& weight, Tensor& convState,
                                      const LinearAttentionBatch& batch, Tensor& out) {
  const char* op = "causalConv1d";
  const contract::ConvDims d = contract::checkCausalConv1d(x, weight, convState, out);
  checkF32(op, {{"x", &x}, {"convState", &convState}, {"out", &out}});
  AFD_CHECK(d.W <= kConvMaxWidth, op << ": kernel width " << d.W << " is above the CUDA limit " << kConvMaxWidth);
  const LinearBatchArgs b = batchArgs(op, batch, d.T);
  cuda::causalConv1d(x.ptr<float>(), weight.data, code(weight.dtype), convState.ptr<float>(), b, out.ptr<float>(),
                     static_cast<int>(d.C), static_cast<int>(d.W), ctx_.stream());
}

void LinearAttentionOps::gatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                        const Tensor& beta, Tensor& state, const LinearAttentionBatch& batch, Tensor& out) {
  const char* op = "gatedDeltaRule";
  const contract::GdnDims d = contract::checkGatedDeltaRule(q, k, v, g, beta, state, out);
  checkF32(op, {{"q", &q}, {"k", &k}, {"v", &v}, {"g", &g}, {"beta", &beta}, {"state", &state}, {"out", &out}});
  AFD_CHECK(d.Dk >= 1 && d.Dk <= kGdnMaxHeadDim && d.Dv >= 1 && d.Dv <= kGdnMaxHeadDim,
            op << ": head dims " << d.Dk << " x " << d.Dv << " are outside the CUDA kernel's [1, " << kGdnMaxHeadDim << "]");
  GatedDeltaRuleArgs a;
  a.q = q.ptr<float>();
  a.k = k.ptr<float>();
  a.v = v.ptr<float>();
  a.g = g.ptr<float>();
  a.beta = beta.ptr<float>();
  a.state = state.ptr<float>();
  a.out = out.ptr<float>();
  a.keyHeads = static_cast<int>(d.Hk);
  a.valueHeads = static_cast<int>(d.Hv);
  a.keyDim = static_cast<int>(d.Dk);
  a.valueDim = static_cast<int>(d.Dv);
  a.qScale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.Dk)));  // as the CPU op rounds it
  // One token per sequence (decode steps): the coalesced kernel, unless AFD_GDN_KERNEL=warps.
  a.columns = d.T == batch.numSeqs && !debugEnv().gdnWarpKernel;
  cuda::gatedDeltaRule(a, batchArgs(op, batch, d.T), ctx_.stream());
}

void LinearAttentionOps::rmsNormGated(const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out) {
  contract::checkRmsNormGated(x, z, weight, out);
  checkF32("rmsNormGated", {{"x", &x}, {"z", &z}, {"out", &out}});
  AFD_CHECK(x.dim(0) * x.dim(1) < INT_MAX, "rmsNormGated: " << x.dim(0) * x.dim(1) << " rows are too many for the CUDA kernel");
  cuda::rmsNormGated(x.ptr<float>(), z.ptr<float>(), weight.data, code(weight.dtype), eps, out.ptr<float>(),
                     static_cast<int>(x.dim(0) * x.dim(1)), static_cast<int>(x.dim(2)), ctx_.stream());
}

void LinearAttentionOps::gdnGating(const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g,
                                   Tensor& beta) {
  contract::checkGdnGating(a, b, aLog, dtBias, g, beta);
  checkF32("gdnGating", {{"a", &a}, {"b", &b}, {"g", &g}, {"beta", &beta}});
  cuda::gdnGating(a.ptr<float>(), b.ptr<float>(), aLog.data, code(aLog.dtype), dtBias.data, code(dtBias.dtype),
                  g.ptr<float>(), beta.ptr<float>(), static_cast<int>(a.dim(0)), static_cast<int>(a.dim(1)),
                  ctx_.stream());
}

void LinearAttentionOps::splitColumns(const Tensor& x, const std::vector<Tensor*>& outs) {
  contract::checkSplitColumns(x, outs);
  AFD_CHECK(x.dim(1) < INT_MAX, "splitColumns: " << x.dim(1) << " columns do not fit the kernel's int offsets");
  SplitColumnsArgs a;
  a.numOuts = static_cast<int>(outs.size());
  for (int i = 0; i < a.numOuts; ++i) {
    a.outs[i] = outs[i]->ptr<float>();
    a.begins[i + 1] = a.begins[i] + static_cast<int>(outs[i]->dim(1));
  }
  cuda::splitColumns(x.ptr<float>(), a, x.dim(0), ctx_.stream());
}

}  // namespace afd::cuda
