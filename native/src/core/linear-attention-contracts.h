// Shape contracts of the linear-attention Backend ops (core/backend.h, "linear
// attention"), one per op, shared by every backend that implements them (as
// core/op-contracts.h for the others). They check shapes and the weights' dtype; each
// backend then checks its activation dtypes, and the CPU also checks the batch's values
// (a device backend cannot read them without a synchronization, so it trusts them).
#pragma once
#include <vector>

#include "core/linear-attention-ops.h"
#include "core/op-checks.h"

namespace afd::contract {

// Shapes and dtypes of the batch tensors: seqStarts [S + 1], stateSlots and hasState [S], i32.
inline void checkLinearBatchShapes(const char* op, const LinearAttentionBatch& batch) {
  const int64_t S = batch.numSeqs;
  AFD_CHECK(S >= 0 && batch.maxSeqLen >= 0, op << ": numSeqs " << S << " and maxSeqLen " << batch.maxSeqLen
                                                << " must not be negative");
  checkShape(op, "seqStarts", batch.seqStarts, {S + 1});
  checkShape(op, "stateSlots", batch.stateSlots, {S});
  checkShape(op, "hasState", batch.hasState, {S});
  checkDType(op, "seqStarts", batch.seqStarts, DType::I32);
  checkDType(op, "stateSlots", batch.stateSlots, DType::I32);
  checkDType(op, "hasState", batch.hasState, DType::I32);
}

struct ConvDims {
  int64_t T = 0, C = 0, W = 0;
};

// x, out: [T, C]; weight: [C, W] (f32, bf16 or f16); convState: [numSlots, C, W - 1].
inline ConvDims checkCausalConv1d(const Tensor& x, const Tensor& weight, const Tensor& convState, const Tensor& out) {
  const char* op = "causalConv1d";
  checkShape(op, "x", x, {-1, -1});
  ConvDims d{x.dim(0), x.dim(1), 0};
  checkShape(op, "weight", weight, {d.C, -1});
  checkFloat(op, "weight", weight);
  d.W = weight.dim(1);
  AFD_CHECK(d.W >= 1, op << ": weight has kernel width " << d.W << ", expected at least 1");
  checkShape(op, "convState", convState, {-1, d.C, d.W - 1});
  checkShape(op, "out", out, {d.T, d.C});
  return d;
}

struct GdnDims {
  int64_t T = 0, Hk = 0, Dk = 0, Hv = 0, Dv = 0;
};

// q, k: [T, Hk, Dk]; v, out: [T, Hv, Dv] with Hv a multiple of Hk; g, beta: [T, Hv];
// state: [numSlots, Hv, Dk, Dv].
inline GdnDims checkGatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                                   const Tensor& state, const Tensor& out) {
  const char* op = "gatedDeltaRule";
  checkShape(op, "q", q, {-1, -1, -1});
  GdnDims d{q.dim(0), q.dim(1), q.dim(2), 0, 0};
  checkShape(op, "k", k, {d.T, d.Hk, d.Dk});
  checkShape(op, "v", v, {d.T, -1, -1});
  d.Hv = v.dim(1);
  d.Dv = v.dim(2);
  AFD_CHECK(d.Hk > 0 && d.Hv % d.Hk == 0, op << ": " << d.Hv << " value heads are not a multiple of " << d.Hk << " key heads");
  checkShape(op, "g", g, {d.T, d.Hv});
  checkShape(op, "beta", beta, {d.T, d.Hv});
  checkShape(op, "state", state, {-1, d.Hv, d.Dk, d.Dv});
  checkShape(op, "out", out, {d.T, d.Hv, d.Dv});
  return d;
}

// x, z, out: [T, H, D]; weight: [D] (f32, bf16 or f16).
inline void checkRmsNormGated(const Tensor& x, const Tensor& z, const Tensor& weight, const Tensor& out) {
  const char* op = "rmsNormGated";
  checkShape(op, "x", x, {-1, -1, -1});
  const int64_t T = x.dim(0), H = x.dim(1), D = x.dim(2);
  checkShape(op, "z", z, {T, H, D});
  checkShape(op, "weight", weight, {D});
  checkFloat(op, "weight", weight);
  checkShape(op, "out", out, {T, H, D});
}

// a, b, g, beta: [T, Hv]; aLog, dtBias: [Hv] (f32, bf16 or f16).
inline void checkGdnGating(const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, const Tensor& g,
                           const Tensor& beta) {
  const char* op = "gdnGating";
  checkShape(op, "a", a, {-1, -1});
  const int64_t T = a.dim(0), Hv = a.dim(1);
  checkShape(op, "b", b, {T, Hv});
  checkShape(op, "aLog", aLog, {Hv});
  checkFloat(op, "aLog", aLog);
  checkShape(op, "dtBias", dtBias, {Hv});
  checkFloat(op, "dtBias", dtBias);
  checkShape(op, "g", g, {T, Hv});
  checkShape(op, "beta", beta, {T, Hv});
}

// x: [T, C] f32; outs: 1 to kMaxSplitColumns tensors [T, w_i] f32 with sum w_i = C.
constexpr int kMaxSplitColumns = 4;
inline void checkSplitColumns(const Tensor& x, const std::vector<Tensor*>& outs) {
  const char* op = "splitColumns";
  checkShape(op, "x", x, {-1, -1});
  checkDType(op, "x", x, DType::F32);
  AFD_CHECK(!outs.empty() && static_cast<int>(outs.size()) <= kMaxSplitColumns,
            op << ": " << outs.size() << " outputs; 1 to " << kMaxSplitColumns << " are supported");
  int64_t columns = 0;
  for (const Tensor* out : outs) {
    AFD_CHECK(out != nullptr, op << ": an output is null");
    checkShape(op, "out", *out, {x.dim(0), -1});
    checkDType(op, "out", *out, DType::F32);
    columns += out->dim(1);
  }
  AFD_CHECK(columns == x.dim(1), op << ": the outputs' " << columns << " columns do not add up to x's " << x.dim(1));
}

}  // namespace afd::contract
