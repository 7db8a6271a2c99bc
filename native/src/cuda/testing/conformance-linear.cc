// Conformance cases of the linear-attention ops (Qwen3-Next / Qwen3.5 Gated DeltaNet):
// causalConv1d, gatedDeltaRule, rmsNormGated and gdnGating against the CPU ops. Batches
// of sequences of 1, 3, 17 and 200 tokens in state slots out of order, continuing from
// the slot (hasState 1) or from zero over stale values (hasState 0), with slots no
// sequence uses (they must stay untouched); odd shapes (Hv = 2 Hk, Dk 12 / Dv 9, C = 70)
// and the Qwen3-Next layer's (Hk 16, Hv 32, D 128, C = 2 * 16 * 128 + 32 * 128); conv
// and norm out aliasing x; bf16, f16 and f32 weights. The decode batch is also run as a
// replayed CUDA graph (the ops must capture: no sync, no allocation, no host reads).
// Decode-shaped batches (a token per sequence) take the rule's column-per-lane kernel, the
// others its warp-per-column kernel (cuda/gated-delta-rule.cu).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

// The recurrence carries rounding through up to 200 tokens of state updates.
constexpr double kRecurrentBound = 1e-4;

struct SeqPlan {
  std::vector<int32_t> lengths, slots, hasState;
  int64_t numSlots = 0;
  std::string name;
};

const SeqPlan kPrefill{{1, 3, 17, 200}, {4, 0, 2, 5}, {1, 0, 1, 0}, 6, "seqs 1,3,17,200 slots 4,0,2,5"};
const SeqPlan kDecode{{1, 1, 1}, {2, 0, 3}, {1, 1, 0}, 5, "decode seqs 1,1,1 slots 2,0,3"};
// n one-token sequences in permuted slots, two of three continuing their state: a decode
// batch wide enough to fill the grid (64 sequences of the Qwen3-Next shape: 8,192 blocks).
SeqPlan decodePlan(int n) {
  SeqPlan p{std::vector<int32_t>(n, 1), std::vector<int32_t>(n), std::vector<int32_t>(n), n, "decode " + std::to_string(n) + " seqs, permuted slots"};
  for (int i = 0; i < n; ++i) {
    p.slots[i] = (i * 37) % n;
    p.hasState[i] = i % 3 != 0;
  }
  return p;
}
const SeqPlan kDecodeLong = decodePlan(64);
const SeqPlan kShort{{2, 1, 40}, {1, 2, 0}, {1, 1, 0}, 3, "seqs 2,1,40 slots 1,2,0"};

// One batch on both backends (core/linear-attention-ops.h).
struct BatchTwins {
  Twin starts, slots, has;
  int numSeqs = 0, maxSeqLen = 0;
  int64_t T = 0;

  LinearAttentionBatch view(bool gpu) {
    LinearAttentionBatch b;
    b.seqStarts = gpu ? starts.gpu() : starts.cpu();
    b.stateSlots = gpu ? slots.gpu() : slots.cpu();
    b.hasState = gpu ? has.gpu() : has.cpu();
    b.numSeqs = numSeqs;
    b.maxSeqLen = maxSeqLen;
    return b;
  }
};

BatchTwins makeBatch(Suite& s, const SeqPlan& p) {
  std::vector<int32_t> starts{0};
  int maxLen = 0;
  for (int32_t len : p.lengths) {
    starts.push_back(starts.back() + len);
    maxLen = std::max(maxLen, len);
  }
  const auto S = static_cast<int64_t>(p.lengths.size());
  BatchTwins b{s.ints(starts, {S + 1}), s.ints(p.slots, {S}), s.ints(p.hasState, {S}), static_cast<int>(S), maxLen,
               starts.back()};
  return b;
}

void convCases(Suite& s) {
  struct Case { int64_t C, W; DType wt; bool inPlace; const SeqPlan* plan; };
  for (Case c : {Case{70, 4, DType::F32, false, &kPrefill}, Case{70, 4, DType::BF16, true, &kPrefill},
                 Case{70, 3, DType::F16, false, &kDecode}, Case{8192, 4, DType::BF16, false, &kPrefill},
                 Case{8192, 4, DType::BF16, true, &kPrefill}, Case{8192, 4, DType::BF16, true, &kDecode}}) {
    BatchTwins b = makeBatch(s, *c.plan);
    Twin x = s.random(DType::F32, {b.T, c.C}, -2, 2), w = s.random(c.wt, {c.C, c.W});
    Twin state = s.random(DType::F32, {c.plan->numSlots, c.C, c.W - 1}, -2, 2);
    Twin sep = s.output(DType::F32, {b.T, c.C});
    Twin& out = c.inPlace ? x : sep;
    Tensor xc = x.cpu(), xg = x.gpu(), sc = state.cpu(), sg = state.gpu(), oc = out.cpu(), og = out.gpu();
    s.cpu_.causalConv1d(xc, w.cpu(), sc, b.view(false), oc);
    s.cuda_.causalConv1d(xg, w.gpu(), sg, b.view(true), og);
    const std::string shape = "C" + std::to_string(c.C) + " W" + std::to_string(c.W) + " " + c.plan->name +
                              (c.inPlace ? " out=x" : "");
    s.check("causalConv1d.out", shape, dtypeName(c.wt), out, kF32Bound);
    s.check("causalConv1d.convState", shape, dtypeName(c.wt), state, 0);  // copies of inputs: exact
  }
}

// Random rule inputs of T tokens: log decays in [-1.5, 0], betas in [0, 1] like the model's.
struct GdnTwins {
  Twin q, k, v, g, beta, state, out;
};

GdnTwins gdnInputs(Suite& s, int64_t T, int64_t Hk, int64_t Hv, int64_t Dk, int64_t Dv, int64_t numSlots) {
  return GdnTwins{s.random(DType::F32, {T, Hk, Dk}, -2, 2), s.random(DType::F32, {T, Hk, Dk}, -2, 2),
                  s.random(DType::F32, {T, Hv, Dv}, -3, 3),  s.random(DType::F32, {T, Hv}, -1.5, 0),
                  s.random(DType::F32, {T, Hv}, 0, 1),       s.random(DType::F32, {numSlots, Hv, Dk, Dv}, -0.5, 0.5),
                  s.output(DType::F32, {T, Hv, Dv})};
}

void runRule(Suite& s, GdnTwins& t, BatchTwins& b, bool gpu) {
  Tensor st = gpu ? t.state.gpu() : t.state.cpu(), o = gpu ? t.out.gpu() : t.out.cpu();
  if (gpu) {
    s.cuda_.gatedDeltaRule(t.q.gpu(), t.k.gpu(), t.v.gpu(), t.g.gpu(), t.beta.gpu(), st, b.view(true), o);
  } else {
    s.cpu_.gatedDeltaRule(t.q.cpu(), t.k.cpu(), t.v.cpu(), t.g.cpu(), t.beta.cpu(), st, b.view(false), o);
  }
}

void ruleCases(Suite& s) {
  struct Case { int64_t Hk, Hv, Dk, Dv; const SeqPlan* plan; };
  for (Case c : {Case{2, 4, 12, 9, &kPrefill}, Case{2, 4, 12, 9, &kDecode}, Case{3, 3, 40, 33, &kShort},
                 Case{16, 32, 128, 128, &kPrefill}, Case{16, 32, 128, 128, &kDecode}, Case{1, 2, 256, 256, &kShort},
                 Case{3, 3, 40, 33, &kDecode}, Case{1, 2, 256, 256, &kDecode}, Case{16, 32, 128, 128, &kDecodeLong}}) {
    BatchTwins b = makeBatch(s, *c.plan);
    GdnTwins t = gdnInputs(s, b.T, c.Hk, c.Hv, c.Dk, c.Dv, c.plan->numSlots);
    runRule(s, t, b, false);
    runRule(s, t, b, true);
    const std::string shape = dims({c.Hk, c.Hv, c.Dk, c.Dv}) + " " + c.plan->name;
    s.check("gatedDeltaRule.out", shape, "f32", t.out, kRecurrentBound);
    s.check("gatedDeltaRule.state", shape, "f32", t.state, kRecurrentBound);
  }
}

// Three decode steps of the Qwen3-Next shape captured once as a CUDA graph and replayed:
// the state advances on the device exactly as three eager CPU steps advance it.
void graphCase(Suite& s) {
  BatchTwins b = makeBatch(s, kDecode);
  GdnTwins t = gdnInputs(s, b.T, 16, 32, 128, 128, kDecode.numSlots);
  runRule(s, t, b, true);  // warm-up outside the capture (also advances the device state once)
  runRule(s, t, b, false);
  s.cuda_.synchronize();
  s.cuda_.beginCapture();
  try {
    runRule(s, t, b, true);
  } catch (...) {
    s.cuda_.abortCapture();
    throw;
  }
  std::unique_ptr<CapturedGraph> graph = s.cuda_.endCapture();
  runRule(s, t, b, false);
  graph->replay();
  runRule(s, t, b, false);
  graph->replay();
  s.check("gatedDeltaRule.state (graph replay)", "16x32x128x128 " + kDecode.name + " x3", "f32", t.state, kRecurrentBound);
  s.check("gatedDeltaRule.out (graph replay)", "16x32x128x128 " + kDecode.name + " x3", "f32", t.out, kRecurrentBound);
}

void normCases(Suite& s) {
  struct Case { int64_t T, H, D; DType wt; bool inPlace; };
  for (Case c : {Case{5, 3, 11, DType::F32, false}, Case{5, 3, 11, DType::F16, true}, Case{221, 32, 128, DType::BF16, false},
                 Case{221, 32, 128, DType::BF16, true}}) {
    Twin x = s.random(DType::F32, {c.T, c.H, c.D}, -3, 3), z = s.random(DType::F32, {c.T, c.H, c.D}, -3, 3);
    Twin w = s.random(c.wt, {c.D}, 0.5, 1.5);
    Twin sep = s.output(DType::F32, {c.T, c.H, c.D});
    Twin& out = c.inPlace ? x : sep;
    Tensor xc = x.cpu(), xg = x.gpu(), oc = out.cpu(), og = out.gpu();
    s.cpu_.rmsNormGated(xc, z.cpu(), w.cpu(), 1e-6f, oc);
    s.cuda_.rmsNormGated(xg, z.gpu(), w.gpu(), 1e-6f, og);
    s.check("rmsNormGated", dims({c.T, c.H, c.D}) + (c.inPlace ? " out=x" : ""), dtypeName(c.wt), out, kF32Bound);
  }
}

// a spans [-30, 30]: softplus's linear branch (a + dt_bias > 20) and deep negatives.
void gatingCases(Suite& s) {
  struct Case { int64_t T, Hv; DType wt; };
  for (Case c : {Case{5, 3, DType::F16}, Case{221, 32, DType::BF16}, Case{7, 32, DType::F32}}) {
    Twin a = s.random(DType::F32, {c.T, c.Hv}, -30, 30), bIn = s.random(DType::F32, {c.T, c.Hv}, -8, 8);
    Twin aLog = s.random(c.wt, {c.Hv}, -2, 2), dtBias = s.random(c.wt, {c.Hv}, -1, 1);
    Twin g = s.output(DType::F32, {c.T, c.Hv}), beta = s.output(DType::F32, {c.T, c.Hv});
    Tensor gc = g.cpu(), gg = g.gpu(), bc = beta.cpu(), bg = beta.gpu();
    s.cpu_.gdnGating(a.cpu(), bIn.cpu(), aLog.cpu(), dtBias.cpu(), gc, bc);
    s.cuda_.gdnGating(a.gpu(), bIn.gpu(), aLog.gpu(), dtBias.gpu(), gg, bg);
    s.check("gdnGating.g", dims({c.T, c.Hv}), dtypeName(c.wt), g, kF32Bound);
    s.check("gdnGating.beta", dims({c.T, c.Hv}), dtypeName(c.wt), beta, kF32Bound);
  }
}

}  // namespace

void linearAttentionOps(Suite& s) {
  convCases(s);
  ruleCases(s);
  graphCase(s);
  normCases(s);
  gatingCases(s);
}

}  // namespace afd::cuda::conformance
