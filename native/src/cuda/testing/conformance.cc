#include "cuda/testing/conformance.h"

#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {

void normOps(Suite& s) {
  for (int64_t H : {129, 2048}) {
    for (DType wt : {DType::BF16, DType::F32}) {
      const int64_t T = 3;
      Twin x = s.random(DType::F32, {T, H}, -2, 2), w = s.random(wt, {H}, 0.5, 1.5), out = s.output(DType::F32, {T, H});
      Tensor xc = x.cpu(), oc = out.cpu(), xg = x.gpu(), og = out.gpu();
      s.cpu_.rmsNorm(xc, w.cpu(), 1e-6f, oc);
      s.cuda_.rmsNorm(xg, w.gpu(), 1e-6f, og);
      s.check("rmsNorm", dims({T, H}), dtypeName(wt), out, kF32Bound);
      Twin d = s.random(DType::F32, {T, H}), r = s.random(DType::F32, {T, H}), o2 = s.output(DType::F32, {T, H});
      Tensor rc = r.cpu(), rg = r.gpu(), o2c = o2.cpu(), o2g = o2.gpu();
      s.cpu_.addRmsNorm(d.cpu(), rc, w.cpu(), 1e-6f, o2c);
      s.cuda_.addRmsNorm(d.gpu(), rg, w.gpu(), 1e-6f, o2g);
      s.check("addRmsNorm.out", dims({T, H}), dtypeName(wt), o2, kF32Bound);
      s.check("addRmsNorm.residual", dims({T, H}), dtypeName(wt), r, kF32Bound);
    }
  }
  for (DType wt : {DType::BF16, DType::F32}) {
    const int64_t V = 37, H = 100, T = 6;
    Twin table = s.random(wt, {V, H});
    Twin ids = s.ints({0, 36, 5, 5, 17, 2}, {T});
    Twin out = s.output(DType::F32, {T, H});
    Tensor oc = out.cpu(), og = out.gpu();
    s.cpu_.embedding(ids.cpu(), table.cpu(), oc);
    s.cuda_.embedding(ids.gpu(), table.gpu(), og);
    s.check("embedding", dims({V, H, T}), dtypeName(wt), out, 0);
  }
  Twin a = s.random(DType::F32, {7, 33}), b = s.random(DType::F32, {7, 33}), o = s.output(DType::F32, {7, 33});
  Tensor oc = o.cpu(), og = o.gpu();
  s.cpu_.add(a.cpu(), b.cpu(), oc);
  s.cuda_.add(a.gpu(), b.gpu(), og);
  s.check("add", "7x33", "f32", o, 0);
  Twin rows = s.ints({6, 0, 3}, {3}), g = s.output(DType::F32, {3, 33});
  Tensor gc = g.cpu(), gg = g.gpu();
  s.cpu_.gatherRows(a.cpu(), rows.cpu(), gc);
  s.cuda_.gatherRows(a.gpu(), rows.gpu(), gg);
  s.check("gatherRows", "7x33->3", "f32", g, 0);
}

}  // namespace afd::cuda::conformance

namespace afd::cuda {

namespace {

using FamilyFn = void (*)(conformance::Suite&);
const std::pair<const char*, FamilyFn> kFamilies[] = {
    {"norm", conformance::normOps},           {"attention", conformance::attentionOps},
    {"matmul", conformance::matmulOps},       {"activations", conformance::activationOps},
    {"deepseek", conformance::deepseekOps},   {"linear", conformance::linearAttentionOps},
};

}  // namespace

std::vector<std::string> conformanceFamilies() {
  std::vector<std::string> names;
  for (const auto& f : kFamilies) names.emplace_back(f.first);
  return names;
}

std::vector<ConformanceCase> runConformance(int deviceIndex, const CudaOptions& options, uint64_t seed,
                                            const std::string& family) {
  using namespace conformance;
  bool known = family.empty();
  for (const auto& f : kFamilies) known = known || family == f.first;
  AFD_CHECK(known, "cudaConformance: unknown family \"" << family << "\" (norm, attention, matmul, activations, deepseek, linear)");
  Suite s(deviceIndex, options, seed);
  for (const auto& [name, run] : kFamilies) {
    if (!family.empty() && family != name) continue;
    try {
      run(s);
    } catch (const std::exception& e) {
      ConformanceCase c{std::string(name) + " family", "-", "-"};
      c.relError = -1;
      c.shape = std::string("threw: ") + e.what();
      s.results_.push_back(c);
      cudaDeviceSynchronize();
      cudaGetLastError();
    }
  }
  return s.results_;
}

}  // namespace afd::cuda
