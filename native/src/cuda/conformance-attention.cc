// Conformance cases of the attention family: q/k norm + RoPE, KV cache write, paged attention.
#include <algorithm>

#include "cuda/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

void ropeCases(Suite& s) {
  for (int64_t D : {64, 128, 10}) {
    for (bool norms : {true, false}) {
      const int64_t T = 5, nH = 4, nKv = 2;
      Twin q = s.random(DType::F32, {T, nH, D}, -3, 3), k = s.random(DType::F32, {T, nKv, D}, -3, 3);
      Twin qn = s.random(DType::BF16, {D}, 0.5, 1.5), kn = s.random(DType::BF16, {D}, 0.5, 1.5);
      std::vector<int32_t> pos(T);
      for (auto& p : pos) p = s.randInt(0, 4000);
      Twin positions = s.ints(pos, {T});
      Twin inv = s.make(DType::F32, {D / 2});
      for (int64_t i = 0; i < D / 2; ++i) s.setElem(inv, i, static_cast<float>(1.0 / std::pow(1e6, 2.0 * i / D)));
      inv.upload();
      RopeParams cpuRope{inv.cpu(), norms ? 1.0f : 1.2f}, gpuRope{inv.gpu(), norms ? 1.0f : 1.2f};
      Tensor qc = q.cpu(), kc = k.cpu(), qg = q.gpu(), kg = k.gpu();
      Tensor qnc = qn.cpu(), knc = kn.cpu(), qng = qn.gpu(), kng = kn.gpu();
      s.cpu_.qkNormRope(qc, kc, positions.cpu(), norms ? &qnc : nullptr, norms ? &knc : nullptr, 1e-6f, cpuRope);
      s.cuda_.qkNormRope(qg, kg, positions.gpu(), norms ? &qng : nullptr, norms ? &kng : nullptr, 1e-6f, gpuRope);
      const std::string name = std::string("qkNormRope") + (norms ? "" : ".noNorm");
      s.check(name + ".q", dims({T, nH, D}), "f32", q, kF32Bound);
      s.check(name + ".k", dims({T, nKv, D}), "f32", k, kF32Bound);
    }
  }
}

void kvWriteCases(Suite& s) {
  for (DType ct : {DType::BF16, DType::F32, DType::F16}) {
    const int64_t T = 7, nKv = 2, D = 64, blocks = 9, B = 4;
    Twin k = s.random(DType::F32, {T, nKv, D}), v = s.random(DType::F32, {T, nKv, D});
    Twin kc = s.random(ct, {blocks, B, nKv, D}), vc = s.random(ct, {blocks, B, nKv, D});
    Twin slots = s.ints({0, 35, -1, 9, 10, 22, 3}, {T});
    Tensor kcc = kc.cpu(), vcc = vc.cpu(), kcg = kc.gpu(), vcg = vc.gpu();
    s.cpu_.writeKvCache(k.cpu(), v.cpu(), slots.cpu(), kcc, vcc);
    s.cuda_.writeKvCache(k.gpu(), v.gpu(), slots.gpu(), kcg, vcg);
    s.check("writeKvCache.k", dims({T, nKv, D}), dtypeName(ct), kc, 0);
    s.check("writeKvCache.v", dims({T, nKv, D}), dtypeName(ct), vc, 0);
  }
}

// Sequences with the given query positions; each sequence gets shuffled block ids.
void attentionCase(Suite& s, DType ct, int64_t nH, int64_t nKv, int64_t D, const std::vector<int32_t>& tokenSeq,
                   const std::vector<int32_t>& positions, int numSeqs, const std::string& label) {
  const int64_t B = 16;
  const int maxPos = *std::max_element(positions.begin(), positions.end());
  const int maxBlocks = maxPos / B + 1;
  const int64_t numBlocks = static_cast<int64_t>(numSeqs) * maxBlocks + 3;
  std::vector<int32_t> ids(numBlocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), s.rng_);
  std::vector<int32_t> tables(static_cast<size_t>(numSeqs) * maxBlocks);
  for (size_t i = 0; i < tables.size(); ++i) tables[i] = ids[i];
  const int64_t T = static_cast<int64_t>(positions.size());
  Twin q = s.random(DType::F32, {T, nH, D}, -2, 2);
  Twin kc = s.random(ct, {numBlocks, B, nKv, D}, -2, 2), vc = s.random(ct, {numBlocks, B, nKv, D});
  Twin seq = s.ints(tokenSeq, {T}), pos = s.ints(positions, {T});
  Twin tab = s.ints(tables, {numSeqs, maxBlocks});
  Twin out = s.output(DType::F32, {T, nH, D});
  AttentionBatch bc{seq.cpu(), pos.cpu(), tab.cpu(), numSeqs, maxBlocks, 1, maxPos + 1};
  AttentionBatch bg{seq.gpu(), pos.gpu(), tab.gpu(), numSeqs, maxBlocks, 1, maxPos + 1};
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Tensor oc = out.cpu(), og = out.gpu();
  s.cpu_.pagedAttention(q.cpu(), kc.cpu(), vc.cpu(), bc, scale, oc);
  s.cuda_.pagedAttention(q.gpu(), kc.gpu(), vc.gpu(), bg, scale, og);
  s.check("pagedAttention." + label, "T" + std::to_string(T) + " nH" + std::to_string(nH) + " nKv" +
              std::to_string(nKv) + " D" + std::to_string(D) + " maxPos" + std::to_string(maxPos),
          dtypeName(ct), out, 1e-4);
}

}  // namespace

void attentionOps(Suite& s) {
  ropeCases(s);
  kvWriteCases(s);
  for (DType ct : {DType::BF16, DType::F32}) {
    // Decode: one query per sequence, short, odd and long (split) contexts.
    attentionCase(s, ct, 8, 2, 128, {0, 1, 2}, {0, 36, 1500}, 3, "decode");
    attentionCase(s, ct, 16, 2, 64, {0, 1}, {300, 4}, 2, "decode.group8");
  }
  // Prefill: 37 causal queries of one sequence, plus a second sequence's decode row.
  std::vector<int32_t> seq(38, 0), pos(38);
  for (int i = 0; i < 37; ++i) pos[i] = i;
  seq[37] = 1;
  pos[37] = 700;
  attentionCase(s, DType::BF16, 8, 4, 128, seq, pos, 2, "prefill");
  attentionCase(s, DType::F16, 4, 4, 256, {0}, {99}, 1, "mha.d256");
  attentionCase(s, DType::F32, 6, 3, 10, {0, 1, 0}, {5, 200, 6}, 2, "generic.d10");
}

}  // namespace afd::cuda::conformance
