// The Gated DeltaNet ops of Qwen3-Next / Qwen3.5 linear-attention layers (core/backend.h,
// "linear attention"): depthwise causal conv with a rolling state, the gated delta rule
// over a per-sequence state matrix, and the gated RMSNorm of its output.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/linear-attention-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/row-math.h"

namespace afd::cpu {
namespace {

// Matches HF's l2norm (and FLA's): x / sqrt(sum x^2 + eps), eps inside the root.
constexpr double kL2NormEps = 1e-6;

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

std::vector<float> toF32(const Tensor& w) {
  std::vector<float> f(static_cast<size_t>(w.numel()));
  convertElems(w.data, w.dtype, 0, w.numel(), f.data());
  return f;
}

// Checks the batch's values against T tokens and numSlots state rows (its shapes are
// core/linear-attention-contracts.h's): offsets start at 0, never decrease and end at T;
// slots are in range and distinct (two sequences writing one slot would race); hasState
// is 0 or 1; maxSeqLen covers every sequence (device backends may size scratch or grids by
// it, so a wrong value must fail here too).
void checkBatch(const char* op, const LinearAttentionBatch& batch, int64_t T, int64_t numSlots) {
  contract::checkLinearBatchShapes(op, batch);
  const int64_t S = batch.numSeqs;
  const int32_t* starts = batch.seqStarts.ptr<int32_t>();
  const int32_t* slots = batch.stateSlots.ptr<int32_t>();
  const int32_t* has = batch.hasState.ptr<int32_t>();
  AFD_CHECK(starts[0] == 0 && starts[S] == T, op << ": seqStarts must run from 0 to the " << T << " tokens, got "
                                                 << starts[0] << " .. " << starts[S]);
  std::vector<bool> used(static_cast<size_t>(numSlots), false);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t len = starts[s + 1] - starts[s];
    AFD_CHECK(len >= 0, op << ": seqStarts decreases at sequence " << s << " (" << starts[s] << " -> " << starts[s + 1] << ")");
    AFD_CHECK(len <= batch.maxSeqLen, op << ": sequence " << s << " has " << len << " tokens, more than maxSeqLen "
                                         << batch.maxSeqLen);
    AFD_CHECK(slots[s] >= 0 && slots[s] < numSlots, op << ": state slot " << slots[s] << " of sequence " << s
                                                       << " is outside the " << numSlots << " slots");
    AFD_CHECK(!used[slots[s]], op << ": state slot " << slots[s] << " is used by two sequences of one batch");
    used[slots[s]] = true;
    AFD_CHECK(has[s] == 0 || has[s] == 1, op << ": hasState of sequence " << s << " is " << has[s] << ", expected 0 or 1");
  }
}

}  // namespace

// x, out: [T, C] f32; weight: [C, W]; convState: [numSlots, C, W - 1] f32.
void causalConv1d(ThreadPool& pool, const Tensor& x, const Tensor& weight, Tensor& convState,
                  const LinearAttentionBatch& batch, Tensor& out) {
  const char* op = "causalConv1d";
  const contract::ConvDims d = contract::checkCausalConv1d(x, weight, convState, out);
  const int64_t C = d.C, W = d.W;
  const int64_t ctx = W - 1;  // inputs of context each output reads besides its own
  checkCpuF32(op, "x", x);
  checkCpuF32(op, "convState", convState);
  checkCpuF32(op, "out", out);
  checkBatch(op, batch, d.T, convState.dim(0));
  const std::vector<float> w = toF32(weight);
  const int32_t* starts = batch.seqStarts.ptr<int32_t>();
  const int32_t* slots = batch.stateSlots.ptr<int32_t>();
  const int32_t* has = batch.hasState.ptr<int32_t>();
  // One work item per (sequence, block of channels). Each channel keeps its last W - 1
  // inputs in a window, so x[t] is read before out[t] is written and out may alias x.
  constexpr int64_t kBlock = 64;
  const int64_t numBlocks = (C + kBlock - 1) / kBlock;
  pool.parallelFor(batch.numSeqs * numBlocks, 1, [&](int64_t b, int64_t e) {
    std::vector<float> window(static_cast<size_t>(ctx * kBlock));  // window[j * kBlock + i]: oldest first
    for (int64_t item = b; item < e; ++item) {
      const int64_t s = item / numBlocks, c0 = item % numBlocks * kBlock, n = std::min(kBlock, C - c0);
      float* state = convState.ptr<float>() + slots[s] * C * ctx;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < ctx; ++j) window[j * kBlock + i] = has[s] ? state[(c0 + i) * ctx + j] : 0.0f;
      for (int64_t t = starts[s]; t < starts[s + 1]; ++t) {
        for (int64_t i = 0; i < n; ++i) {
          const float* wc = w.data() + (c0 + i) * W;
          const float xt = x.ptr<float>()[t * C + c0 + i];
          float acc = 0;
          for (int64_t j = 0; j < ctx; ++j) acc += wc[j] * window[j * kBlock + i];
          acc += wc[ctx] * xt;
          for (int64_t j = 0; j + 1 < ctx; ++j) window[j * kBlock + i] = window[(j + 1) * kBlock + i];
          if (ctx > 0) window[(ctx - 1) * kBlock + i] = xt;
          out.ptr<float>()[t * C + c0 + i] = silu(acc);
        }
      }
      // A chunk shorter than W - 1 keeps older context in the window: the state is the
      // last W - 1 entries of (previous state or zeros) ++ inputs, as HF's concat-and-slice.
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < ctx; ++j) state[(c0 + i) * ctx + j] = window[j * kBlock + i];
    }
  });
}

// q, k: [T, Hk, Dk] f32; v, out: [T, Hv, Dv] f32; g, beta: [T, Hv] f32;
// state: [numSlots, Hv, Dk, Dv] f32.
//
// This is HF's torch_recurrent_gated_delta_rule run token by token, which is exact: the
// chunked form (torch_chunk_gated_delta_rule, FLA's kernels) evaluates the same
// recurrence faster by batching a chunk's tokens into matrix products, and equals it up
// to rounding (native/src/testing/linearAttentionReference.ts checks both in float64).
void gatedDeltaRule(ThreadPool& pool, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                    const Tensor& beta, Tensor& state, const LinearAttentionBatch& batch, Tensor& out) {
  const char* op = "gatedDeltaRule";
  const contract::GdnDims d = contract::checkGatedDeltaRule(q, k, v, g, beta, state, out);
  const int64_t T = d.T, Hk = d.Hk, Dk = d.Dk, Hv = d.Hv, Dv = d.Dv;
  const std::pair<const char*, const Tensor*> f32s[] = {{"q", &q}, {"k", &k}, {"v", &v}, {"g", &g}, {"beta", &beta},
                                                        {"state", &state}, {"out", &out}};
  for (const auto& [what, t] : f32s) checkCpuF32(op, what, *t);
  checkBatch(op, batch, T, state.dim(0));
  const int64_t group = Hv / Hk;
  const float qScale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dk)));
  const int32_t* starts = batch.seqStarts.ptr<int32_t>();
  const int32_t* slots = batch.stateSlots.ptr<int32_t>();
  const int32_t* has = batch.hasState.ptr<int32_t>();
  // x / sqrt(sum x^2 + eps) * scale, sum in double.   x, out: [n].
  auto l2norm = [](const float* x, int64_t n, float scale, float* out) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss + kL2NormEps)) * scale;
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv;
  };
  // One work item per (sequence, value head): each owns its [Dk, Dv] state matrix.
  pool.parallelFor(batch.numSeqs * Hv, 1, [&](int64_t b, int64_t e) {
    std::vector<float> qn(Dk), kn(Dk), delta(Dv);
    for (int64_t item = b; item < e; ++item) {
      const int64_t s = item / Hv, h = item % Hv, kh = h / group;
      float* S = state.ptr<float>() + (slots[s] * Hv + h) * Dk * Dv;  // [Dk, Dv]
      if (!has[s]) std::fill(S, S + Dk * Dv, 0.0f);
      for (int64_t t = starts[s]; t < starts[s + 1]; ++t) {
        l2norm(q.ptr<float>() + (t * Hk + kh) * Dk, Dk, qScale, qn.data());
        l2norm(k.ptr<float>() + (t * Hk + kh) * Dk, Dk, 1.0f, kn.data());
        const float decay = std::exp(g.ptr<float>()[t * Hv + h]);
        const float bt = beta.ptr<float>()[t * Hv + h];
        const float* vt = v.ptr<float>() + (t * Hv + h) * Dv;
        // Decay, then delta = beta (v - S^T k): the correction that makes S^T k move toward v.
        for (int64_t i = 0; i < Dk * Dv; ++i) S[i] *= decay;
        std::copy(vt, vt + Dv, delta.begin());
        for (int64_t i = 0; i < Dk; ++i) axpy(-kn[i], S + i * Dv, delta.data(), Dv);
        for (int64_t j = 0; j < Dv; ++j) delta[j] *= bt;
        // S += k delta^T; out = S^T q (read after the update, like HF).
        for (int64_t i = 0; i < Dk; ++i) axpy(kn[i], delta.data(), S + i * Dv, Dv);
        float* ot = out.ptr<float>() + (t * Hv + h) * Dv;
        std::fill(ot, ot + Dv, 0.0f);
        for (int64_t i = 0; i < Dk; ++i) axpy(qn[i], S + i * Dv, ot, Dv);
      }
    }
  });
}

// x, z, out: [T, H, D] f32; weight: [D].
void rmsNormGated(ThreadPool& pool, const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out) {
  const char* op = "rmsNormGated";
  contract::checkRmsNormGated(x, z, weight, out);
  const int64_t T = x.dim(0), H = x.dim(1), D = x.dim(2);
  checkCpuF32(op, "x", x);
  checkCpuF32(op, "z", z);
  checkCpuF32(op, "out", out);
  const std::vector<float> w = toF32(weight);
  pool.parallelFor(T * H, 16, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* o = out.ptr<float>() + r * D;
      const float* zr = z.ptr<float>() + r * D;
      rmsNormRow(x.ptr<float>() + r * D, w.data(), eps, D, o);
      for (int64_t i = 0; i < D; ++i) o[i] *= silu(zr[i]);
    }
  });
}

// a, b, g, beta: [T, Hv] f32; aLog, dtBias: [Hv].
// g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b), in f32 like HF's
// (a.float() + dt_bias, A_log.float().exp()); softplus as torch's (threshold 20: x above
// it is returned as is, where log1p(exp(x)) equals x to f32 precision anyway).
void gdnGating(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g,
               Tensor& beta) {
  const char* op = "gdnGating";
  contract::checkGdnGating(a, b, aLog, dtBias, g, beta);
  const std::pair<const char*, const Tensor*> f32s[] = {{"a", &a}, {"b", &b}, {"g", &g}, {"beta", &beta}};
  for (const auto& [what, t] : f32s) checkCpuF32(op, what, *t);
  const int64_t Hv = a.dim(1);
  const std::vector<float> aLogF = toF32(aLog), dtBiasF = toF32(dtBias);
  pool.parallelFor(a.numel(), 1024, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t h = i % Hv;
      const float x = a.ptr<float>()[i] + dtBiasF[h];
      const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
      g.ptr<float>()[i] = -std::exp(aLogF[h]) * softplus;
      beta.ptr<float>()[i] = 1.0f / (1.0f + std::exp(-b.ptr<float>()[i]));
    }
  });
}

// outs[i] = x[:, c_i .. c_i + w_i), the column ranges back to back.
void splitColumns(ThreadPool& pool, const Tensor& x, const std::vector<Tensor*>& outs) {
  contract::checkSplitColumns(x, outs);
  checkCpuF32("splitColumns", "x", x);
  const int64_t C = x.dim(1);
  pool.parallelFor(x.dim(0), 16, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const float* row = x.ptr<float>() + t * C;
      for (Tensor* out : outs) {
        const int64_t w = out->dim(1);
        std::copy(row, row + w, out->ptr<float>() + t * w);
        row += w;
      }
    }
  });
}

}  // namespace afd::cpu
