// Conformance cases of the GEMM family (matmul, SiLU MLP, router, MoE experts) and sampling.
#include "core/sampling-rng.h"
#include "cuda/sampling.cuh"
#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

void matmulCases(Suite& s) {
  struct Shape { int64_t T, K, N; };
  for (Shape sh : {Shape{1, 64, 17}, Shape{7, 2048, 129}, Shape{33, 256, 1}, Shape{70, 512, 96}, Shape{5, 100, 31}}) {
    for (DType wt : {DType::BF16, DType::F32}) {
      for (bool bias : {false, true}) {
        Twin x = s.random(DType::F32, {sh.T, sh.K}), w = s.random(wt, {sh.N, sh.K}, -0.1f, 0.1f);
        Twin b = s.random(wt, {sh.N}), out = s.output(DType::F32, {sh.T, sh.N});
        Tensor bc = b.cpu(), bg = b.gpu(), oc = out.cpu(), og = out.gpu();
        s.cpu_.matmul(x.cpu(), w.cpu(), bias ? &bc : nullptr, oc);
        s.cuda_.matmul(x.gpu(), w.gpu(), bias ? &bg : nullptr, og);
        s.check(bias ? "matmul.bias" : "matmul", dims({sh.T, sh.K, sh.N}), dtypeName(wt), out,
                wt == DType::BF16 && sh.K % 8 == 0 ? kSplitBound : kF32Bound);
      }
    }
  }
}

void mlpCases(Suite& s) {
  struct Shape { int64_t T, H, I; };
  for (Shape sh : {Shape{1, 96, 24}, Shape{9, 128, 40}, Shape{3, 64, 12}, Shape{50, 256, 72}}) {
    Twin x = s.random(DType::F32, {sh.T, sh.H});
    Twin g = s.random(DType::BF16, {sh.I, sh.H}, -0.2f, 0.2f), u = s.random(DType::BF16, {sh.I, sh.H}, -0.2f, 0.2f);
    Twin d = s.random(DType::BF16, {sh.H, sh.I}, -0.2f, 0.2f), out = s.output(DType::F32, {sh.T, sh.H});
    Tensor oc = out.cpu(), og = out.gpu();
    s.cpu_.siluGatedMlp(x.cpu(), g.cpu(), u.cpu(), d.cpu(), oc);
    s.cuda_.siluGatedMlp(x.gpu(), g.gpu(), u.gpu(), d.gpu(), og);
    s.check("siluGatedMlp", dims({sh.T, sh.H, sh.I}), "bf16", out, kSplitBound);
  }
}

void routerCases(Suite& s) {
  struct Shape { int64_t T, E; int k; bool norm; };
  for (Shape sh : {Shape{11, 8, 2, true}, Shape{5, 60, 4, false}, Shape{300, 128, 8, true}}) {
    Twin logits = s.random(DType::F32, {sh.T, sh.E}, -4, 4);
    Twin ids = s.output(DType::I32, {sh.T, sh.k}), w = s.output(DType::F32, {sh.T, sh.k});
    Tensor ic = ids.cpu(), ig = ids.gpu(), wc = w.cpu(), wg = w.gpu();
    s.cpu_.routerTopK(logits.cpu(), sh.k, sh.norm, ic, wc);
    s.cuda_.routerTopK(logits.gpu(), sh.k, sh.norm, ig, wg);
    s.check("routerTopK.weights", dims({sh.T, sh.E, sh.k}), "f32", w, kF32Bound);
    std::vector<int32_t> ref(ids.numel()), got(ids.numel());
    std::memcpy(ref.data(), ids.host.data(), 4 * ref.size());
    AFD_CUDA_CHECK(cudaMemcpy(got.data(), ids.dev.data(), 4 * got.size(), cudaMemcpyDeviceToHost));
    s.checkExact("routerTopK.ids", dims({sh.T, sh.E, sh.k}), ref, got);
  }
}

void moeCases(Suite& s) {
  struct Shape { int64_t T, H, I; int E, k; };
  for (Shape sh : {Shape{1, 64, 32, 8, 2}, Shape{5, 96, 24, 16, 4}, Shape{40, 128, 40, 12, 3}, Shape{3, 100, 20, 6, 2}}) {
    ExpertTwins experts = randomExperts(s, sh.E, sh.H, sh.I);
    const std::vector<ExpertWeights>& cpuExperts = experts.cpu;
    const std::vector<ExpertWeights>& gpuExperts = experts.gpu;
    std::vector<int32_t> idv(sh.T * sh.k);
    for (int64_t t = 0; t < sh.T; ++t) {
      std::vector<int32_t> pick(sh.E);
      std::iota(pick.begin(), pick.end(), 0);
      std::shuffle(pick.begin(), pick.end(), s.rng_);
      for (int j = 0; j < sh.k; ++j) idv[t * sh.k + j] = pick[j];
    }
    Twin ids = s.ints(idv, {sh.T, sh.k});
    Twin w = s.random(DType::F32, {sh.T, sh.k}, 0.0f, 1.0f);
    Twin x = s.random(DType::F32, {sh.T, sh.H}), out = s.output(DType::F32, {sh.T, sh.H});
    Tensor oc = out.cpu(), og = out.gpu();
    s.cpu_.moeExperts(x.cpu(), ids.cpu(), w.cpu(), cpuExperts, oc);
    s.cuda_.moeExperts(x.gpu(), ids.gpu(), w.gpu(), gpuExperts, og);
    s.check("moeExperts", dims({sh.T, sh.H, sh.I, sh.E, sh.k}), "bf16", out, kSplitBound);
    // With an addend (DeepSeek's shared experts), added in the combine on CUDA.
    Twin addend = s.random(DType::F32, {sh.T, sh.H}, -2, 2), sum = s.output(DType::F32, {sh.T, sh.H});
    Tensor sc = sum.cpu(), sg = sum.gpu(), ac = addend.cpu(), ag = addend.gpu();
    s.cpu_.moeExperts(x.cpu(), ids.cpu(), w.cpu(), cpuExperts, sc, &ac);
    s.cuda_.moeExperts(x.gpu(), ids.gpu(), w.gpu(), gpuExperts, sg, &ag);
    s.check("moeExperts+addend", dims({sh.T, sh.H, sh.I, sh.E, sh.k}), "bf16", sum, kSplitBound);
  }
}

void samplingCases(Suite& s) {
  const int S = 24;
  const int64_t V = 1001;
  Twin logits = s.random(DType::F32, {S, V}, -6, 6);
  std::vector<float> temperature(S), topP(S);
  std::vector<int32_t> topK(S), positions(S);
  std::vector<uint32_t> seeds(S);
  for (int i = 0; i < S; ++i) {
    temperature[i] = i % 4 == 0 ? 0.0f : 0.5f + 0.1f * (i % 7);
    topK[i] = (i % 3 == 0) ? 0 : (i % 3 == 1 ? 5 : 50);
    topP[i] = (i % 5 == 0) ? 1.0f : 0.3f + 0.1f * (i % 6);
    seeds[i] = 1234u + 17u * i;
    positions[i] = 3 * i + 1;
  }
  SamplingBatch p{temperature.data(), topK.data(), topP.data(), seeds.data(), positions.data()};
  std::vector<int32_t> ref(S), got(S);
  s.cpu_.sample(logits.cpu(), p, ref.data());
  s.cuda_.sample(logits.gpu(), p, got.data());
  s.checkExact("sample", "S24 V1001 greedy/temperature/topK/topP", ref, got);

  // The device's uniform must equal core/sampling-rng.h bit for bit.
  const int n = 4096;
  std::vector<uint32_t> sd(n);
  std::vector<int32_t> ps(n), refBits(n), gotBits(n);
  for (int i = 0; i < n; ++i) {
    sd[i] = static_cast<uint32_t>(s.rng_());
    ps[i] = static_cast<int32_t>(s.rng_() % 100000);
  }
  DeviceBuffer dSeeds("seeds", 4 * n), dPos("positions", 4 * n), dOut("uniforms", 4 * n);
  AFD_CUDA_CHECK(cudaMemcpy(dSeeds.data(), sd.data(), 4 * n, cudaMemcpyHostToDevice));
  AFD_CUDA_CHECK(cudaMemcpy(dPos.data(), ps.data(), 4 * n, cudaMemcpyHostToDevice));
  samplingUniforms(dSeeds.as<uint32_t>(), dPos.as<int32_t>(), dOut.as<float>(), n, nullptr);
  AFD_CUDA_CHECK(cudaMemcpy(gotBits.data(), dOut.data(), 4 * n, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    const float u = samplingUniform(sd[i], ps[i]);
    std::memcpy(&refBits[i], &u, 4);
  }
  s.checkExact("samplingUniform", "4096 (seed, position) pairs", refBits, gotBits);
}

}  // namespace

void matmulOps(Suite& s) {
  matmulCases(s);
  mlpCases(s);
  routerCases(s);
  moeCases(s);
  samplingCases(s);
  logitOps(s);
}

}  // namespace afd::cuda::conformance
