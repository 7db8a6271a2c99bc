// Conformance cases of the DeepSeek ops: the MLA prologue (latent norm + partial RoPE),
// the latent cache write, absorbed MLA attention over a paged latent cache (against the
// CPU's absorbed decode / expanded prefill; a DBO-like subset of the tokens must be
// bit-equal to the same tokens of the whole call), the grouped router on every scoring
// and top-k method (ids exact), the routing scatter, and the bf16 add of the shared
// experts. Odd shapes throughout: small kv_lora / rope dims, 9-12 experts, 2+ groups.
#include <algorithm>
#include <tuple>
#include <utility>

#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

std::vector<int32_t> ints(const uint8_t* p, size_t bytes) {
  std::vector<int32_t> v(bytes / 4);
  std::memcpy(v.data(), p, bytes);
  return v;
}
std::vector<int32_t> hostInts(const Twin& t) { return ints(t.host.data(), t.host.size()); }
std::vector<int32_t> deviceInts(const Twin& t) {
  std::vector<uint8_t> bytes(t.host.size());
  AFD_CUDA_CHECK(cudaMemcpy(bytes.data(), t.dev.data(), bytes.size(), cudaMemcpyDeviceToHost));
  return ints(bytes.data(), bytes.size());
}

// RoPE inverse frequencies of a rope part of R dims (theta 10000).
Twin invFreq(Suite& s, int64_t R) {
  Twin inv = s.make(DType::F32, {R / 2});
  for (int64_t i = 0; i < R / 2; ++i) s.setElem(inv, i, static_cast<float>(1.0 / std::pow(10000.0, 2.0 * i / R)));
  inv.upload();
  return inv;
}

void normRopeCases(Suite& s) {
  struct Shape { int64_t T, nH, N, R, L; bool interleaved; float attentionScale; };
  for (Shape sh : {Shape{5, 3, 6, 4, 14, true, 1.0f}, Shape{4, 2, 4, 6, 10, false, 1.3f}, Shape{6, 5, 16, 6, 28, true, 1.1f},
                   Shape{3, 16, 128, 64, 512, true, 1.0f}, Shape{2, 6, 8, 4, 16, false, 1.0f}}) {
    Twin q = s.random(DType::F32, {sh.T, sh.nH, sh.N + sh.R}, -2, 2), kvA = s.random(DType::F32, {sh.T, sh.L + sh.R}, -2, 2);
    Twin norm = s.random(DType::BF16, {sh.L}, 0.5, 1.5);
    std::vector<int32_t> pos(sh.T);
    for (auto& p : pos) p = s.randInt(0, 4000);
    Twin positions = s.ints(pos, {sh.T});
    Twin inv = invFreq(s, sh.R);
    RopeParams cpuRope{inv.cpu(), sh.attentionScale}, gpuRope{inv.gpu(), sh.attentionScale};
    Tensor qc = q.cpu(), qg = q.gpu(), kc = kvA.cpu(), kg = kvA.gpu();
    s.cpu_.mlaNormRope(qc, kc, norm.cpu(), 1e-6f, positions.cpu(), cpuRope, sh.interleaved);
    s.cuda_.mlaNormRope(qg, kg, norm.gpu(), 1e-6f, positions.gpu(), gpuRope, sh.interleaved);
    const std::string shape = "T" + std::to_string(sh.T) + " nH" + std::to_string(sh.nH) + " N" + std::to_string(sh.N) + " R" +
                              std::to_string(sh.R) + " L" + std::to_string(sh.L) + (sh.interleaved ? " interleaved" : " rotate-half");
    s.check("mlaNormRope.q", shape, "f32", q, kF32Bound);
    s.check("mlaNormRope.kvA", shape, "f32", kvA, kF32Bound);
  }
}

void latentWriteCases(Suite& s) {
  for (DType ct : {DType::BF16, DType::F32, DType::F16}) {
    const int64_t T = 7, W = 18, blocks = 9, B = 4;
    Twin kvA = s.random(DType::F32, {T, W}), cache = s.random(ct, {blocks, B, W});
    Twin slots = s.ints({0, 35, -1, 9, 10, 22, 3}, {T});
    Tensor cc = cache.cpu(), cg = cache.gpu();
    s.cpu_.writeLatentCache(kvA.cpu(), slots.cpu(), cc);
    s.cuda_.writeLatentCache(kvA.gpu(), slots.gpu(), cg);
    s.check("writeLatentCache", dims({T, W}) + " -> " + dims({blocks, B, W}), dtypeName(ct), cache, 0);
  }
}

// One paged MLA batch: sequence i has contextLens[i] cached tokens and queries the last
// queryLens[i] of them (1 = decode). Unused table entries are -1 and every cache slot no
// query may read holds NaN.
struct MlaCase {
  std::string label;
  int64_t nH, L, R, N, V, blockSize;
  std::vector<int> contextLens, queryLens;
  DType cacheDtype = DType::BF16, kvBDtype = DType::BF16;
  int64_t stepRows = 0;  // Backend::setStepRows for the call (0: the call's own rows)
};

void runMlaCase(Suite& s, const MlaCase& c) {
  const int numSeqs = static_cast<int>(c.contextLens.size());
  const int64_t B = c.blockSize, W = c.L + c.R;
  int maxBlocks = 1, maxQueryLen = 1;
  std::vector<int32_t> seqOf, posOf;
  std::vector<int64_t> seqStart;  // first token of each sequence
  for (int sq = 0; sq < numSeqs; ++sq) {
    maxBlocks = std::max(maxBlocks, static_cast<int>((c.contextLens[sq] + B - 1) / B));
    maxQueryLen = std::max(maxQueryLen, c.queryLens[sq]);
    seqStart.push_back(static_cast<int64_t>(seqOf.size()));
    for (int p = c.contextLens[sq] - c.queryLens[sq]; p < c.contextLens[sq]; ++p) {
      seqOf.push_back(sq);
      posOf.push_back(p);
    }
  }
  const int64_t T = static_cast<int64_t>(seqOf.size());
  const int64_t numBlocks = static_cast<int64_t>(numSeqs) * maxBlocks + 3;
  std::vector<int32_t> ids(numBlocks), tables(static_cast<size_t>(numSeqs) * maxBlocks, -1);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), s.rng_);
  Twin cache = s.make(c.cacheDtype, {numBlocks, B, W});
  std::fill(cache.host.begin(), cache.host.end(), 0xff);  // NaN wherever no query may read
  std::uniform_real_distribution<float> u(-1, 1);
  for (int sq = 0, next = 0; sq < numSeqs; ++sq) {
    for (int p = 0; p < c.contextLens[sq]; ++p) {
      if (p % B == 0) tables[static_cast<size_t>(sq) * maxBlocks + p / B] = ids[next++];
      const int64_t slot = static_cast<int64_t>(tables[static_cast<size_t>(sq) * maxBlocks + p / B]) * B + p % B;
      for (int64_t i = 0; i < W; ++i) s.setElem(cache, slot * W + i, u(s.rng_));
    }
  }
  cache.upload();
  Twin q = s.random(DType::F32, {T, c.nH, c.N + c.R}, -1, 1);
  Twin kvB = s.random(c.kvBDtype, {c.nH * (c.N + c.V), c.L}, -0.3f, 0.3f);
  Twin seq = s.ints(seqOf, {T}), pos = s.ints(posOf, {T}), tab = s.ints(tables, {numSeqs, maxBlocks});
  const int maxCtx = *std::max_element(c.contextLens.begin(), c.contextLens.end());
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.N + c.R));
  Twin out = s.output(DType::F32, {T, c.nH, c.V});
  Tensor oc = out.cpu(), og = out.gpu();
  s.cpu_.mlaAttention(q.cpu(), cache.cpu(), kvB.cpu(),
                      AttentionBatch{seq.cpu(), pos.cpu(), tab.cpu(), numSeqs, maxBlocks, maxQueryLen, maxCtx}, scale, oc);
  const int64_t stepRows = std::max(T, c.stepRows);
  s.cuda_.setStepRows(stepRows);
  s.cuda_.mlaAttention(q.gpu(), cache.gpu(), kvB.gpu(),
                       AttentionBatch{seq.gpu(), pos.gpu(), tab.gpu(), numSeqs, maxBlocks, maxQueryLen, maxCtx}, scale, og);
  const std::string shape = "T" + std::to_string(T) + " nH" + std::to_string(c.nH) + " L" + std::to_string(c.L) + " R" +
                            std::to_string(c.R) + " N" + std::to_string(c.N) + " V" + std::to_string(c.V) + " B" +
                            std::to_string(B) + " maxCtx" + std::to_string(maxCtx) +
                            (c.stepRows > 0 ? " stepRows" + std::to_string(c.stepRows) : "");
  s.check("mlaAttention." + c.label, shape, std::string(dtypeName(c.cacheDtype)) + " cache, " + dtypeName(c.kvBDtype) + " kv_b",
          out, 1e-4);
  if (numSeqs > 1) {
    // A DBO stage: the tokens of sequences 1.. alone, under the whole call's step rows,
    // must give the bits the whole call gave them (its own, smaller maxContextLen).
    const int64_t t0 = seqStart[1];
    int stageCtx = 0, stageQuery = 1;
    for (int sq = 1; sq < numSeqs; ++sq) {
      stageCtx = std::max(stageCtx, c.contextLens[sq]);
      stageQuery = std::max(stageQuery, c.queryLens[sq]);
    }
    Twin stageOut = s.output(DType::F32, {T - t0, c.nH, c.V});
    Tensor sg = stageOut.gpu();
    Tensor qStage = q.gpu().rows(t0, T);
    s.cuda_.mlaAttention(qStage, cache.gpu(), kvB.gpu(),
                         AttentionBatch{seq.gpu().rows(t0, T), pos.gpu().rows(t0, T), tab.gpu(), numSeqs, maxBlocks, stageQuery,
                                        stageCtx},
                         scale, sg);
    s.cuda_.synchronize();
    const std::vector<int32_t> whole = deviceInts(out);
    const size_t rowInts = static_cast<size_t>(c.nH * c.V);
    s.checkExact("mlaAttention.stageBits." + c.label, shape + " tokens " + std::to_string(t0) + "..",
                 std::vector<int32_t>(whole.begin() + static_cast<int64_t>(t0 * rowInts), whole.end()), deviceInts(stageOut));
  }
  s.cuda_.setStepRows(0);
}

void mlaAttentionCases(Suite& s) {
  const DType bf = DType::BF16, f32 = DType::F32;
  const std::vector<MlaCase> cases{
      {"decode.tiny", 3, 14, 4, 6, 5, 4, {1, 9, 70}, {1, 1, 1}},
      {"prefill.grouped", 5, 28, 6, 16, 14, 16, {37, 130, 5}, {37, 1, 3}, f32, bf},
      {"mixed.v3yarn", 4, 20, 8, 10, 12, 16, {40, 1000, 2}, {20, 1, 2}},
      {"decode.v2lite", 16, 512, 64, 128, 128, 16, {1100, 300, 64, 65}, {1, 1, 1, 1}},
      {"prefill.v2lite", 16, 512, 64, 128, 128, 16, {40, 1030}, {40, 1}},
      {"heads20", 20, 32, 16, 24, 16, 8, {200, 17}, {1, 17}, bf, f32},
      {"fewChunks", 4, 64, 16, 32, 32, 16, {1000, 300}, {1, 1}, bf, bf, 5000},
      {"oneChunk", 4, 64, 16, 32, 32, 16, {1000, 300}, {2, 1}, bf, bf, 1 << 20},
      {"f16cache", 2, 24, 8, 12, 10, 4, {50}, {3}, DType::F16, f32},
      // The tensor-core partials (latent 512 + rope 64, bf16 cache): a second head tile of 4
      // heads, and one chunk of 1000 rows (16 sub-tiles through the online softmax).
      {"tc.heads20.longChunk", 20, 512, 64, 32, 32, 16, {1000, 130}, {1, 1}, bf, bf, 5000},
      {"tc.v3heads", 128, 512, 64, 128, 128, 16, {300, 7}, {1, 2}},
  };
  for (const MlaCase& c : cases) runMlaCase(s, c);
}

struct RouteCase {
  std::string label;
  int64_t T, E;
  int k;
  RouterScoring scoring;
  RouterTopkMethod method;
  int groups, topkGroups;
  bool normTopk;
  float scale;
  bool bias;
  DType biasDtype = DType::F32;
};

void runRouteCase(Suite& s, const RouteCase& c) {
  Twin logits = s.random(DType::F32, {c.T, c.E}, -3, 3);
  if (c.scoring == RouterScoring::None) {
    // Dense routing weights (what the attention role sends): k positive entries per row.
    std::fill(logits.host.begin(), logits.host.end(), 0);
    std::uniform_real_distribution<float> w(0.05f, 1.0f);
    std::vector<int> order(static_cast<size_t>(c.E));
    for (int64_t t = 0; t < c.T; ++t) {
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), s.rng_);
      for (int j = 0; j < c.k; ++j) s.setElem(logits, t * c.E + order[j], w(s.rng_));
    }
    logits.upload();
  }
  Twin bias = s.random(c.biasDtype, {c.E}, -0.1f, 0.1f);
  Twin ids = s.output(DType::I32, {c.T, c.k}), weights = s.output(DType::F32, {c.T, c.k});
  MoeRoutingParams p;
  p.k = c.k;
  p.scoring = c.scoring;
  p.method = c.method;
  p.numGroups = c.groups;
  p.topkGroups = c.topkGroups;
  p.normTopk = c.normTopk;
  p.scale = c.scale;
  Tensor bc = bias.cpu(), bg = bias.gpu(), ic = ids.cpu(), ig = ids.gpu(), wc = weights.cpu(), wg = weights.gpu();
  s.cpu_.moeGroupedRoute(logits.cpu(), c.bias ? &bc : nullptr, p, ic, wc);
  s.cuda_.moeGroupedRoute(logits.gpu(), c.bias ? &bg : nullptr, p, ig, wg);
  s.cuda_.synchronize();
  const std::string shape = "T" + std::to_string(c.T) + " E" + std::to_string(c.E) + " k" + std::to_string(c.k) + " groups " +
                            std::to_string(c.groups) + "/" + std::to_string(c.topkGroups) + (c.normTopk ? " norm" : "") +
                            " scale " + std::to_string(c.scale).substr(0, 4) + (c.bias ? " bias" : "");
  s.checkExact("moeGroupedRoute.ids." + c.label, shape, hostInts(ids), deviceInts(ids));
  s.check("moeGroupedRoute.weights." + c.label, shape, c.bias ? dtypeName(c.biasDtype) : "f32", weights, kF32Bound);
}

void routeCases(Suite& s) {
  using S = RouterScoring;
  using M = RouterTopkMethod;
  const std::vector<RouteCase> cases{
      {"softmax.greedy", 7, 9, 2, S::Softmax, M::Greedy, 1, 1, false, 1.5f, false},
      {"softmax.groupLimited", 9, 12, 3, S::Softmax, M::GroupLimitedGreedy, 3, 2, true, 1.0f, false},
      {"softmax.groupLimited.v2", 5, 160, 6, S::Softmax, M::GroupLimitedGreedy, 8, 3, false, 16.0f, false},
      {"softmax.greedy.v2lite", 33, 64, 6, S::Softmax, M::Greedy, 1, 1, false, 1.0f, false},
      {"sigmoid.noaux", 11, 12, 3, S::Sigmoid, M::NoauxTc, 4, 2, true, 2.5f, true},
      {"sigmoid.noaux.bf16bias", 6, 10, 2, S::Sigmoid, M::NoauxTc, 2, 1, false, 1.0f, true, DType::BF16},
      {"sigmoid.noaux.v3", 70, 256, 8, S::Sigmoid, M::NoauxTc, 8, 4, true, 2.5f, true},
      {"sigmoid.greedy.bias", 4, 11, 3, S::Sigmoid, M::Greedy, 1, 1, true, 1.0f, true},
      {"dense.pick", 8, 11, 3, S::None, M::Greedy, 1, 1, false, 1.0f, false},
  };
  for (const RouteCase& c : cases) runRouteCase(s, c);
}

void scatterCases(Suite& s) {
  const int64_t T = 6, K = 3, E = 11;
  std::vector<int32_t> idValues;
  std::vector<int> order(E);
  for (int64_t t = 0; t < T; ++t) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), s.rng_);
    idValues.insert(idValues.end(), order.begin(), order.begin() + K);
  }
  Twin ids = s.ints(idValues, {T, K}), weights = s.random(DType::F32, {T, K}, 0.01f, 1.0f), dense = s.output(DType::F32, {T, E});
  Tensor dc = dense.cpu(), dg = dense.gpu();
  s.cpu_.scatterRouting(ids.cpu(), weights.cpu(), dc);
  s.cuda_.scatterRouting(ids.gpu(), weights.gpu(), dg);
  s.check("scatterRouting", dims({T, K}) + " -> " + dims({T, E}), "f32", dense, 0);
}

// The shared-expert add on bf16 activations: bf16(a + b) per element, exactly.
void addBf16Cases(Suite& s) {
  const int64_t T = 7, H = 33;
  Twin a = s.random(DType::BF16, {T, H}, -4, 4), b = s.random(DType::BF16, {T, H}, -4, 4), out = s.output(DType::BF16, {T, H});
  const std::vector<float> av = a.hostFloats(), bv = b.hostFloats();
  for (int64_t i = 0; i < T * H; ++i) s.setElem(out, i, av[i] + bv[i]);
  Tensor og = out.gpu();
  s.cuda_.add(a.gpu(), b.gpu(), og);
  s.check("add", dims({T, H}), "bf16", out, 0);
  Twin alias = s.random(DType::BF16, {T, H}, -4, 4);
  const std::vector<float> cv = alias.hostFloats();
  for (int64_t i = 0; i < T * H; ++i) s.setElem(alias, i, cv[i] + bv[i]);
  Tensor ag = alias.gpu();
  s.cuda_.add(ag, b.gpu(), ag);
  s.check("add (out aliases a)", dims({T, H}), "bf16", alias, 0);
}

// Qwen3-Next's sigmoid gate, f32 (gated attention: a gate per element) and bf16 (the
// gated shared expert: one gate per row), against the CPU on the same values.
void sigmoidGateCases(Suite& s) {
  const int64_t T = 5, N = 48;
  for (auto [dt, G] : {std::pair<DType, int64_t>{DType::F32, N}, {DType::F32, 4}, {DType::BF16, 1}}) {
    Twin x = s.random(dt, {T, N}, -3, 3), xw = s.widened(x), gate = s.random(DType::F32, {T, G}, -4, 4);
    Twin ref = s.output(DType::F32, {T, N}), got = s.output(dt, {T, N});
    Tensor rc = ref.cpu(), gg = got.gpu();
    s.cpu_.sigmoidGate(xw.cpu(), gate.cpu(), rc);
    s.cuda_.sigmoidGate(x.gpu(), gate.gpu(), gg);
    s.checkAgainst("sigmoidGate", dims({T, N}) + " x " + dims({T, G}), dtypeName(dt), ref, got, dt == DType::BF16 ? kBf16Bound : kF32Bound);
  }
}

}  // namespace

void deepseekOps(Suite& s) {
  sigmoidGateCases(s);
  normRopeCases(s);
  latentWriteCases(s);
  mlaAttentionCases(s);
  routeCases(s);
  scatterCases(s);
  addBf16Cases(s);
}

}  // namespace afd::cuda::conformance
