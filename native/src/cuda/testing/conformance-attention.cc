// Conformance cases of the attention family: q/k norm + RoPE, KV cache write, paged attention.
#include <algorithm>
#include <tuple>
#include <utility>

#include "cuda/attention.cuh"
#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

void ropeCases(Suite& s) {
  // R: the rotated dims (partial RoPE, Qwen3-Next, when R < D).
  for (auto [D, R] : {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {10, 10}, {256, 64}, {12, 6}}) {
    for (bool norms : {true, false}) {
      const int64_t T = 5, nH = 4, nKv = 2;
      Twin q = s.random(DType::F32, {T, nH, D}, -3, 3), k = s.random(DType::F32, {T, nKv, D}, -3, 3);
      Twin qn = s.random(DType::BF16, {D}, 0.5, 1.5), kn = s.random(DType::BF16, {D}, 0.5, 1.5);
      std::vector<int32_t> pos(T);
      for (auto& p : pos) p = s.randInt(0, 4000);
      Twin positions = s.ints(pos, {T});
      Twin inv = s.make(DType::F32, {R / 2});
      for (int64_t i = 0; i < R / 2; ++i) s.setElem(inv, i, static_cast<float>(1.0 / std::pow(1e6, 2.0 * i / R)));
      inv.upload();
      RopeParams cpuRope{inv.cpu(), norms ? 1.0f : 1.2f}, gpuRope{inv.gpu(), norms ? 1.0f : 1.2f};
      Tensor qc = q.cpu(), kc = k.cpu(), qg = q.gpu(), kg = k.gpu();
      Tensor qnc = qn.cpu(), knc = kn.cpu(), qng = qn.gpu(), kng = kn.gpu();
      s.cpu_.qkNormRope(qc, kc, positions.cpu(), norms ? &qnc : nullptr, norms ? &knc : nullptr, 1e-6f, cpuRope);
      s.cuda_.qkNormRope(qg, kg, positions.gpu(), norms ? &qng : nullptr, norms ? &kng : nullptr, 1e-6f, gpuRope);
      const std::string name = std::string("qkNormRope") + (norms ? "" : ".noNorm") + (R < D ? ".partial" + std::to_string(R) : "");
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

// The bound of a call through the backend: bf16 caches run on the tensor cores in auto
// mode, and their prefill kernel rounds its operands as the backend's attentionPrecision
// says (AFD_ATTENTION_PRECISION may set it for the whole suite run).
double attentionBound(Suite& s, DType ct, int maxQueryLen) {
  if (ct != DType::BF16) return 1e-4;
  const bool bf16 = maxQueryLen > 1 && s.cuda_.options().attentionPrecision == AttentionPrecision::Bf16;
  return bf16 ? kBf16Bound : kSplitBound;
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
  int maxQueryLen = 1;
  for (size_t t = 0, run = 1; t < tokenSeq.size(); ++t, ++run) {
    if (t > 0 && tokenSeq[t] != tokenSeq[t - 1]) run = 1;
    maxQueryLen = std::max(maxQueryLen, static_cast<int>(run));
  }
  AttentionBatch bc{seq.cpu(), pos.cpu(), tab.cpu(), numSeqs, maxBlocks, maxQueryLen, maxPos + 1};
  AttentionBatch bg{seq.gpu(), pos.gpu(), tab.gpu(), numSeqs, maxBlocks, maxQueryLen, maxPos + 1};
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Tensor oc = out.cpu(), og = out.gpu();
  s.cpu_.pagedAttention(q.cpu(), kc.cpu(), vc.cpu(), bc, scale, oc);
  s.cuda_.pagedAttention(q.gpu(), kc.gpu(), vc.gpu(), bg, scale, og);
  s.check("pagedAttention." + label, "T" + std::to_string(T) + " nH" + std::to_string(nH) + " nKv" +
              std::to_string(nKv) + " D" + std::to_string(D) + " maxPos" + std::to_string(maxPos),
          dtypeName(ct), out, attentionBound(s, ct, maxQueryLen));
}


// A paged batch for cuda::pagedAttention called directly, so each kernel family can be
// forced per call. Sequence s has contextLens[s] cached tokens and queries the last
// queryLens[s] of them (chunked prefill; 1 = decode); its tokens are contiguous unless
// interleaved. Block tables are shuffled, unused table entries are -1, and every cache
// slot no query may read (other blocks, slots past a context) holds NaN.
struct PagedCase {
  std::string label;
  int64_t nH = 32, nKv = 4, D = 128, blockSize = 16;
  std::vector<int> contextLens, queryLens;
  bool interleaved = false;  // tokens of the sequences alternate (exactness of the run split)
  int numSplits = 0;         // 0: attentionSplits() as the callers do
};

void runPagedCase(Suite& s, const PagedCase& c) {
  const int numSeqs = static_cast<int>(c.contextLens.size());
  const int64_t B = c.blockSize;
  int maxBlocks = 1, maxQueryLen = 1;
  std::vector<std::pair<int32_t, int32_t>> tokens;  // (sequence, position)
  for (int sq = 0; sq < numSeqs; ++sq) {
    maxBlocks = std::max(maxBlocks, static_cast<int>((c.contextLens[sq] + B - 1) / B));
    maxQueryLen = std::max(maxQueryLen, c.queryLens[sq]);
    for (int i = c.contextLens[sq] - c.queryLens[sq]; i < c.contextLens[sq]; ++i) tokens.emplace_back(sq, i);
  }
  if (c.interleaved) std::stable_sort(tokens.begin(), tokens.end(), [](auto x, auto y) { return x.second < y.second; });
  const int64_t T = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> seqOf(T), posOf(T);
  for (int64_t t = 0; t < T; ++t) std::tie(seqOf[t], posOf[t]) = tokens[t];
  const int64_t numBlocks = static_cast<int64_t>(numSeqs) * maxBlocks + 5;
  std::vector<int32_t> ids(numBlocks), tables(static_cast<size_t>(numSeqs) * maxBlocks, -1);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), s.rng_);
  Twin kc = s.make(DType::BF16, {numBlocks, B, c.nKv, c.D}), vc = s.make(DType::BF16, {numBlocks, B, c.nKv, c.D});
  std::fill(kc.host.begin(), kc.host.end(), 0xff);  // NaN everywhere no query may read
  std::fill(vc.host.begin(), vc.host.end(), 0xff);
  std::uniform_real_distribution<float> uk(-2, 2), uv(-1, 1);
  const int64_t row = c.nKv * c.D;
  for (int sq = 0, next = 0; sq < numSeqs; ++sq) {
    for (int p = 0; p < c.contextLens[sq]; ++p) {
      if (p % B == 0) tables[static_cast<size_t>(sq) * maxBlocks + p / B] = ids[next++];
      const int64_t slot = static_cast<int64_t>(tables[static_cast<size_t>(sq) * maxBlocks + p / B]) * B + p % B;
      for (int64_t i = 0; i < row; ++i) {
        s.setElem(kc, slot * row + i, uk(s.rng_));
        s.setElem(vc, slot * row + i, uv(s.rng_));
      }
    }
  }
  kc.upload();
  vc.upload();
  Twin q = s.random(DType::F32, {T, c.nH, c.D}, -2, 2);
  Twin seq = s.ints(seqOf, {T}), pos = s.ints(posOf, {T}), tab = s.ints(tables, {numSeqs, maxBlocks});
  const int maxCtx = *std::max_element(c.contextLens.begin(), c.contextLens.end());
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  Twin out = s.output(DType::F32, {T, c.nH, c.D});
  Tensor oc = out.cpu();
  s.cpu_.pagedAttention(q.cpu(), kc.cpu(), vc.cpu(), AttentionBatch{seq.cpu(), pos.cpu(), tab.cpu(), numSeqs, maxBlocks,
                                                                     maxQueryLen, maxCtx}, scale, oc);
  const int splits = c.numSplits > 0 ? c.numSplits
                                     : attentionSplits(static_cast<int>(T), static_cast<int>(c.nKv), s.cuda_.multiProcessors(),
                                                       s.cuda_.options().attentionBlocksPerSm);
  DeviceBuffer workspace("conformance attention workspace",
                         attentionWorkspaceBytes(static_cast<int>(T), static_cast<int>(c.nH), static_cast<int>(c.D), splits));
  DeviceBuffer counters("conformance split counters", sizeof(int32_t) * T * c.nKv);
  const std::string shape = "T" + std::to_string(T) + " nH" + std::to_string(c.nH) + " nKv" + std::to_string(c.nKv) + " D" +
                            std::to_string(c.D) + " B" + std::to_string(B) + " maxCtx" + std::to_string(maxCtx) +
                            " splits" + std::to_string(splits);
  // (family, maxQueryLen hint): SIMT; tensor-core decode kernel on every token (hint 1);
  // tensor-core prefill kernel (the real hint) where some sequence has several queries.
  // The prefill kernel runs in both operand precisions (AttentionPrecision).
  struct Run {
    AttentionKernel kernel;
    int hint;
    AttentionPrecision precision = AttentionPrecision::Split;
  };
  std::vector<Run> runs{{AttentionKernel::Simt, maxQueryLen}, {AttentionKernel::TensorCore, 1}};
  if (maxQueryLen > 1) {
    runs.push_back({AttentionKernel::TensorCore, maxQueryLen});
    runs.push_back({AttentionKernel::TensorCore, maxQueryLen, AttentionPrecision::Bf16});
  }
  for (auto [kernel, hint, precision] : runs) {
    AFD_CUDA_CHECK(cudaMemset(out.dev.data(), 0xff, out.host.size()));
    AFD_CUDA_CHECK(cudaMemset(counters.data(), 0, sizeof(int32_t) * T * c.nKv));
    AFD_CUDA_CHECK(cudaDeviceSynchronize());
    PagedAttentionArgs a;
    a.q = static_cast<const float*>(q.dev.data());
    a.kCache = kc.dev.data();
    a.vCache = vc.dev.data();
    a.cacheDtype = 2;
    a.blockTables = static_cast<const int32_t*>(tab.dev.data());
    a.querySeq = static_cast<const int32_t*>(seq.dev.data());
    a.positions = static_cast<const int32_t*>(pos.dev.data());
    a.out = static_cast<float*>(out.dev.data());
    a.workspace = static_cast<float*>(workspace.data());
    a.splitCounters = static_cast<int32_t*>(counters.data());
    a.numQueries = static_cast<int>(T);
    a.numHeads = static_cast<int>(c.nH);
    a.numKvHeads = static_cast<int>(c.nKv);
    a.headDim = static_cast<int>(c.D);
    a.blockSize = static_cast<int>(B);
    a.maxBlocksPerSeq = maxBlocks;
    a.numSplits = splits;
    a.scale = scale;
    a.maxQueryLen = hint;
    a.numSeqs = numSeqs;
    a.kernel = kernel;
    a.precision = precision;
    pagedAttention(a, s.cuda_.stream());
    const bool tc = kernel == AttentionKernel::TensorCore, bf16 = precision == AttentionPrecision::Bf16;
    const std::string name = std::string("pagedAttention.") + (tc ? (hint > 1 ? (bf16 ? "tcPrefillBf16." : "tcPrefill.") : "tcDecode.") : "simt.") + c.label;
    s.check(name, shape, "bf16", out, bf16 ? kBf16Bound : tc ? kSplitBound : 1e-4);
    std::vector<int32_t> left(static_cast<size_t>(T * c.nKv)), zeros(left.size(), 0);
    AFD_CUDA_CHECK(cudaMemcpy(left.data(), counters.data(), 4 * left.size(), cudaMemcpyDeviceToHost));
    s.checkExact(name + ".countersRearmed", shape, zeros, left);
  }
}

void pagedCases(Suite& s) {
  std::vector<int> ctx64(64), ones64(64, 1);
  for (int i = 0; i < 64; ++i) ctx64[i] = i % 4 == 0 ? 1000 : i % 4 == 1 ? 15 : i % 4 == 2 ? 17 : s.randInt(1, 1100);
  const std::vector<PagedCase> cases{
      {"decode.b1", 32, 4, 128, 16, {1000}, {1}},
      {"decode.b3.ctx1.15.17", 32, 4, 128, 32, {1, 15, 17}, {1, 1, 1}},
      {"decode.b3.g1.d64", 4, 4, 64, 16, {17, 1000, 15}, {1, 1, 1}},
      {"decode.b3.g4.d64.nosplit", 16, 4, 64, 32, {1000, 1, 17}, {1, 1, 1}, false, 1},
      {"decode.b64", 32, 4, 128, 16, ctx64, ones64},
      {"decode.b64.g4.b32", 16, 4, 64, 32, ctx64, ones64},
      {"decode.b3.g16", 16, 1, 128, 16, {300, 1, 64}, {1, 1, 1}},
      {"decode.b3.d256", 8, 2, 256, 16, {300, 5, 64}, {1, 1, 1}, false, 64},
      {"prefill.odd", 32, 4, 128, 16, {1, 7, 33, 130}, {1, 7, 33, 130}},
      {"prefill.odd.g1.d64", 4, 4, 64, 32, {1, 7, 33, 130}, {1, 7, 33, 130}},
      {"prefill.chunked", 32, 4, 128, 32, {1000, 100}, {64, 33}},
      {"prefill.mixed", 16, 4, 64, 16, {1000, 37, 15, 300, 1}, {1, 37, 1, 20, 1}},
      {"prefill.mixed.g8", 32, 4, 128, 16, {17, 130, 1000, 1}, {1, 130, 1, 1}},
      {"prefill.interleaved", 32, 4, 128, 16, {40, 45, 3}, {40, 20, 3}, true},
      {"prefill.d256", 8, 1, 256, 16, {40, 90}, {40, 3}},
  };
  for (const PagedCase& c : cases) runPagedCase(s, c);
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
  // Through the backend (its attentionKernel option / auto dispatch): a bf16 decode batch of 9
  // (tensor cores in auto mode) and a bf16 chunked prefill + decode batch.
  std::vector<int32_t> dseq(9), dpos(9);
  for (int i = 0; i < 9; ++i) dseq[i] = i, dpos[i] = 100 * i + 3;
  attentionCase(s, DType::BF16, 32, 4, 128, dseq, dpos, 9, "decode.b9");
  std::vector<int32_t> pseq(21, 0), ppos(21);
  for (int i = 0; i < 20; ++i) ppos[i] = 280 + i;
  pseq[20] = 1, ppos[20] = 40;
  attentionCase(s, DType::BF16, 32, 4, 128, pseq, ppos, 2, "chunkedPrefill");
  pagedCases(s);
}

}  // namespace afd::cuda::conformance
