// Conformance cases of the engine's CUDA path: bf16 activations in and out of the norms,
// GEMMs, MLP and MoE ops (against the CPU's f32 computation of the same bf16 values), the
// fused attention prologue and o_proj residual add, and the dummy-weight fill (bit-equal
// to the CPU's).
#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

std::vector<int32_t> deviceInts(const Twin& t) {
  std::vector<int32_t> v(t.host.size() / 4);
  AFD_CUDA_CHECK(cudaMemcpy(v.data(), t.dev.data(), t.host.size(), cudaMemcpyDeviceToHost));
  return v;
}
std::vector<int32_t> hostInts(const Twin& t) {
  std::vector<int32_t> v(t.host.size() / 4);
  std::memcpy(v.data(), t.host.data(), t.host.size());
  return v;
}
// Raw bits of a 2- or 4-byte tensor as i32 per element (for bit-exact comparisons).
std::vector<int32_t> bits(const uint8_t* p, const Twin& t) {
  const size_t n = static_cast<size_t>(t.numel()), b = dtypeBytes(t.dtype);
  std::vector<int32_t> v(n, 0);
  for (size_t i = 0; i < n; ++i) std::memcpy(&v[i], p + i * b, b);
  return v;
}

void fillCases(Suite& s) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    Twin t = s.output(dt, {3, 1000});
    Tensor c = t.cpu(), g = t.gpu();
    const uint64_t key = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(dt);
    s.cpu_.fillRandom(c, key, 0.0346f, dt == DType::F32 ? 1.0f : 0.0f);
    s.cuda_.fillRandom(g, key, 0.0346f, dt == DType::F32 ? 1.0f : 0.0f);
    s.cuda_.synchronize();
    std::vector<uint8_t> dev(t.host.size());
    AFD_CUDA_CHECK(cudaMemcpy(dev.data(), t.dev.data(), dev.size(), cudaMemcpyDeviceToHost));
    s.checkExact("fillRandom (bits)", "3x1000", bits(t.host.data(), t), bits(dev.data(), t));
  }
}

void normCases(Suite& s) {
  for (int64_t H : {129, 2048}) {
    const int64_t T = 5;
    Twin x = s.random(DType::F32, {T, H}, -2, 2), w = s.random(DType::BF16, {H}, 0.5, 1.5);
    Twin ref = s.output(DType::F32, {T, H}), got = s.output(DType::BF16, {T, H});
    Tensor rc = ref.cpu(), gg = got.gpu();
    s.cpu_.rmsNorm(x.cpu(), w.cpu(), 1e-6f, rc);
    s.cuda_.rmsNorm(x.gpu(), w.gpu(), 1e-6f, gg);
    s.checkAgainst("rmsNorm -> bf16", dims({T, H}), "bf16", ref, got, kBf16Bound);
    // delta bf16 (an FFN output), residual f32, out bf16.
    Twin d = s.random(DType::BF16, {T, H}), dw = s.widened(d);
    Twin r = s.random(DType::F32, {T, H}), ref2 = s.output(DType::F32, {T, H}), got2 = s.output(DType::BF16, {T, H});
    Tensor r2c = r.cpu(), r2g = r.gpu(), o2c = ref2.cpu(), o2g = got2.gpu();
    s.cpu_.addRmsNorm(dw.cpu(), r2c, w.cpu(), 1e-6f, o2c);
    s.cuda_.addRmsNorm(d.gpu(), r2g, w.gpu(), 1e-6f, o2g);
    s.checkAgainst("addRmsNorm bf16 -> bf16 .out", dims({T, H}), "bf16", ref2, got2, kBf16Bound);
    s.check("addRmsNorm bf16 -> bf16 .residual", dims({T, H}), "f32", r, kF32Bound);
  }
}

void prologueCases(Suite& s) {
  for (int64_t D : {64, 128}) {
    for (bool norms : {true, false}) {
      const int64_t T = 6, nH = 8, nKv = 2, blocks = 7, B = 4, row = (nH + 2 * nKv) * D;
      Twin qkv = s.random(DType::F32, {T, row}, -3, 3);
      Twin qn = s.random(DType::BF16, {D}, 0.5, 1.5), kn = s.random(DType::BF16, {D}, 0.5, 1.5);
      std::vector<int32_t> pos(T);
      for (auto& p : pos) p = s.randInt(0, 4000);
      Twin positions = s.ints(pos, {T}), slots = s.ints({0, 27, -1, 5, 13, 2}, {T});
      Twin inv = s.make(DType::F32, {D / 2});
      for (int64_t i = 0; i < D / 2; ++i) s.setElem(inv, i, static_cast<float>(1.0 / std::pow(1e6, 2.0 * i / D)));
      inv.upload();
      Twin q = s.output(DType::F32, {T, nH, D});
      Twin kc = s.random(DType::BF16, {blocks, B, nKv, D}), vc = s.random(DType::BF16, {blocks, B, nKv, D});
      RopeParams cpuRope{inv.cpu(), 1.0f}, gpuRope{inv.gpu(), 1.0f};
      Tensor qc = q.cpu(), qg = q.gpu(), kcc = kc.cpu(), vcc = vc.cpu(), kcg = kc.gpu(), vcg = vc.gpu();
      Tensor qnc = qn.cpu(), knc = kn.cpu(), qng = qn.gpu(), kng = kn.gpu();
      s.cpu_.qkNormRopeCache(qkv.cpu(), positions.cpu(), slots.cpu(), norms ? &qnc : nullptr, norms ? &knc : nullptr, 1e-6f,
                             cpuRope, qc, kcc, vcc);
      s.cuda_.qkNormRopeCache(qkv.gpu(), positions.gpu(), slots.gpu(), norms ? &qng : nullptr, norms ? &kng : nullptr, 1e-6f,
                              gpuRope, qg, kcg, vcg);
      const std::string name = std::string("qkNormRopeCache") + (norms ? "" : ".noNorm");
      s.check(name + ".q", dims({T, nH, D}), "f32", q, kF32Bound);
      s.check(name + ".kCache", dims({blocks, B, nKv, D}), "bf16", kc, 1e-3);
      s.check(name + ".vCache", dims({blocks, B, nKv, D}), "bf16", vc, 0);
    }
  }
}

void gemmCases(Suite& s) {
  struct Shape { int64_t T, K, N; };
  for (Shape sh : {Shape{1, 2048, 129}, Shape{7, 512, 96}, Shape{70, 512, 96}}) {
    // matmul with bf16 x (qkv, router, LM head on the normed hidden states).
    Twin x = s.random(DType::BF16, {sh.T, sh.K}), xw = s.widened(x), w = s.random(DType::BF16, {sh.N, sh.K}, -0.1f, 0.1f);
    Twin out = s.output(DType::F32, {sh.T, sh.N});
    Tensor oc = out.cpu(), og = out.gpu();
    s.cpu_.matmul(xw.cpu(), w.cpu(), nullptr, oc);
    s.cuda_.matmul(x.gpu(), w.gpu(), nullptr, og);
    s.check("matmul x bf16", dims({sh.T, sh.K, sh.N}), "bf16", out, kSplitBound);
    // matmulAdd with f32 x into an f32 residual (o_proj); many rows round x to bf16 for cuBLAS.
    Twin a = s.random(DType::F32, {sh.T, sh.K}), b = s.random(DType::BF16, {sh.N});
    Twin res = s.random(DType::F32, {sh.T, sh.N}, -4, 4);
    Tensor rc = res.cpu(), rg = res.gpu(), bc = b.cpu(), bg = b.gpu();
    s.cpu_.matmulAdd(a.cpu(), w.cpu(), &bc, rc);
    s.cuda_.matmulAdd(a.gpu(), w.gpu(), &bg, rg);
    s.check("matmulAdd", dims({sh.T, sh.K, sh.N}), "bf16", res, sh.T > 48 ? kBf16Bound : kSplitBound);
  }
}

void mlpCases(Suite& s) {
  struct Shape { int64_t T, H, I; };
  for (Shape sh : {Shape{1, 96, 24}, Shape{9, 128, 40}, Shape{60, 256, 72}}) {
    Twin x = s.random(DType::BF16, {sh.T, sh.H}), xw = s.widened(x);
    Twin g = s.random(DType::BF16, {sh.I, sh.H}, -0.2f, 0.2f), u = s.random(DType::BF16, {sh.I, sh.H}, -0.2f, 0.2f);
    Twin d = s.random(DType::BF16, {sh.H, sh.I}, -0.2f, 0.2f);
    Twin ref = s.output(DType::F32, {sh.T, sh.H}), got = s.output(DType::BF16, {sh.T, sh.H});
    Tensor rc = ref.cpu(), gg = got.gpu();
    s.cpu_.siluGatedMlp(xw.cpu(), g.cpu(), u.cpu(), d.cpu(), rc);
    s.cuda_.siluGatedMlp(x.gpu(), g.gpu(), u.gpu(), d.gpu(), gg);
    s.checkAgainst("siluGatedMlp bf16", dims({sh.T, sh.H, sh.I}), "bf16", ref, got, kBf16Bound);
  }
}

// The fused MoE op: router on this side (fused router kernel for <= 8 rows, GEMM + one-block
// routing, GEMM + top-k + permutation for many rows) or logits given (gate on attention).
void moeCases(Suite& s) {
  struct Shape { int64_t T, H, I; int E, k; bool logitsGiven; };
  for (Shape sh : {Shape{3, 128, 32, 10, 3, false}, Shape{40, 128, 40, 12, 2, false}, Shape{100, 64, 24, 16, 4, false},
                   Shape{5, 96, 24, 16, 4, true}}) {
    ExpertTwins experts = randomExperts(s, sh.E, sh.H, sh.I);
    const std::vector<ExpertWeights>& cpuExperts = experts.cpu;
    const std::vector<ExpertWeights>& gpuExperts = experts.gpu;
    Twin router = s.random(DType::BF16, {sh.E, sh.H}, -0.3f, 0.3f), given = s.random(DType::F32, {sh.T, sh.E}, -3, 3);
    Twin x = s.random(DType::BF16, {sh.T, sh.H}), xw = s.widened(x);
    Twin logits = s.output(DType::F32, {sh.T, sh.E}), ids = s.output(DType::I32, {sh.T, sh.k});
    Twin wts = s.output(DType::F32, {sh.T, sh.k});
    Twin ref = s.output(DType::F32, {sh.T, sh.H}), got = s.output(DType::BF16, {sh.T, sh.H});
    Tensor routerC = router.cpu(), routerG = router.gpu(), givenC = given.cpu(), givenG = given.gpu();
    auto args = [&](bool cpu) {
      MoeArgs a;
      if (sh.logitsGiven) a.routerLogits = cpu ? &givenC : &givenG;
      else a.routerWeight = cpu ? &routerC : &routerG;
      a.topK = sh.k;
      a.normTopk = true;
      a.logits = cpu ? logits.cpu() : logits.gpu();
      a.expertIds = cpu ? ids.cpu() : ids.gpu();
      a.expertWeights = cpu ? wts.cpu() : wts.gpu();
      a.experts = cpu ? &cpuExperts : &gpuExperts;
      return a;
    };
    MoeArgs ac = args(true), ag = args(false);
    Tensor rc = ref.cpu(), gg = got.gpu();
    s.cpu_.moe(xw.cpu(), ac, rc);
    s.cuda_.moe(x.gpu(), ag, gg);
    const std::string shape = dims({sh.T, sh.H, sh.I, sh.E, sh.k}) + (sh.logitsGiven ? " logits given" : "");
    s.checkAgainst("moe bf16", shape, "bf16", ref, got, kBf16Bound);
    s.checkExact("moe expert ids", shape, hostInts(ids), deviceInts(ids));
    // The routed experts of those ids with a bf16 addend (the shared experts' output),
    // added in the combine: against the CPU's f32 sum of the same values.
    Twin addend = s.random(DType::BF16, {sh.T, sh.H}, -2, 2), addendW = s.widened(addend);
    Twin refSum = s.output(DType::F32, {sh.T, sh.H}), gotSum = s.output(DType::BF16, {sh.T, sh.H});
    Tensor rs = refSum.cpu(), gs = gotSum.gpu(), adc = addendW.cpu(), adg = addend.gpu();
    s.cpu_.moeExperts(xw.cpu(), ids.cpu(), wts.cpu(), cpuExperts, rs, &adc);
    s.cuda_.moeExperts(x.gpu(), ids.gpu(), wts.gpu(), gpuExperts, gs, &adg);
    s.checkAgainst("moeExperts bf16 + addend", shape, "bf16", refSum, gotSum, kBf16Bound);
  }
}

void gatherCases(Suite& s) {
  Twin x = s.random(DType::BF16, {7, 40}), rows = s.ints({6, 0, 3, 3}, {4}), out = s.output(DType::BF16, {4, 40});
  Tensor oc = out.cpu(), og = out.gpu();
  s.cpu_.gatherRows(x.cpu(), rows.cpu(), oc);
  s.cuda_.gatherRows(x.gpu(), rows.gpu(), og);
  s.check("gatherRows", "7x40->4", "bf16", out, 0);
}

}  // namespace

void activationOps(Suite& s) {
  fillCases(s);
  normCases(s);
  prologueCases(s);
  gemmCases(s);
  mlpCases(s);
  moeCases(s);
  gatherCases(s);
}

}  // namespace afd::cuda::conformance
