#include "cuda/expert-gemm-binding.h"

#include "binding/js-options.h"
#include "cuda/expert-gemm-bench.h"

namespace afd::cuda {
namespace {

ExpertGemmBenchOptions toOptions(const Napi::Object& js) {
  const binding::JsOptions o(js, "cudaExpertGemmBench");
  ExpertGemmBenchOptions opt;
  opt.batches = o.integers("batches", opt.batches);
  opt.numExperts = o.integer("numExperts", opt.numExperts);
  opt.hidden = o.integer("hidden", opt.hidden);
  opt.intermediate = o.integer("intermediate", opt.intermediate);
  opt.topK = o.integer("topK", opt.topK);
  opt.layers = o.integer("layers", opt.layers);
  opt.warmup = o.integer("warmup", opt.warmup);
  opt.iterations = o.integer("iterations", opt.iterations);
  opt.seed = static_cast<uint64_t>(o.number("seed", static_cast<double>(opt.seed)));
  opt.deviceIndex = o.integer("device", opt.deviceIndex);
  opt.routing = o.string("routing", opt.routing);
  opt.perExpert = o.boolean("perExpert", opt.perExpert);
  return opt;
}

Napi::Object timing(Napi::Env env, const ExpertGemmTiming& t) {
  Napi::Object j = Napi::Object::New(env);
  j.Set("ran", t.ran);
  j.Set("error", t.error);
  j.Set("deviceMs", t.deviceMs);
  j.Set("deviceMsP10", t.deviceMsP10);
  j.Set("deviceMsP90", t.deviceMsP90);
  j.Set("hostMs", t.hostMs);
  j.Set("achievedGBs", t.achievedGBs);
  j.Set("ratioToFloor", t.ratioToFloor);
  return j;
}

Napi::Object agreement(Napi::Env env, const ExpertGemmAgreement& a) {
  Napi::Object j = Napi::Object::New(env);
  j.Set("ran", a.ran);
  j.Set("relError", a.relError);
  j.Set("maxError", a.maxError);
  j.Set("unwritten", static_cast<double>(a.unwritten));
  return j;
}

Napi::Object toJs(Napi::Env env, const ExpertGemmBenchResult& r) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("deviceName", r.deviceName);
  out.Set("cublasLibrary", r.cublasLibrary);
  out.Set("cublasVersion", r.cublasVersion);
  out.Set("cublasError", r.cublasError);
  out.Set("groupedGemmAvailable", r.groupedGemmAvailable);
  out.Set("batchedGemmAvailable", r.batchedGemmAvailable);
  out.Set("stridedBatchedGemmAvailable", r.stridedBatchedGemmAvailable);
  out.Set("setupSeconds", r.setupSeconds);
  Napi::Array rows = Napi::Array::New(env, r.rows.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const ExpertGemmBenchRow& w = r.rows[i];
    Napi::Object j = Napi::Object::New(env);
    j.Set("batch", w.batch);
    j.Set("routedRows", w.routedRows);
    j.Set("activeExperts", w.activeExperts);
    j.Set("bytes", w.bytes);
    j.Set("floorMs", w.floorMs);
    j.Set("ours", timing(env, w.ours));
    j.Set("oursGraph", timing(env, w.oursGraph));
    j.Set("cublasWithCopy", timing(env, w.cublasWithCopy));
    j.Set("cublasCountsKnown", timing(env, w.cublasCountsKnown));
    j.Set("cublasCountsKnownGraph", timing(env, w.cublasCountsKnownGraph));
    j.Set("cublasPerExpert", timing(env, w.cublasPerExpert));
    j.Set("widenMs", w.widenMs);
    j.Set("oursUnwritten", static_cast<double>(w.oursUnwritten));
    j.Set("cublas", agreement(env, w.cublas));
    j.Set("perExpert", agreement(env, w.perExpert));
    rows.Set(static_cast<uint32_t>(i), j);
  }
  out.Set("rows", rows);
  return out;
}

}  // namespace

Napi::Value cudaExpertGemmBench(const Napi::CallbackInfo& info) {
  return binding::guarded(info, [&]() -> Napi::Value {
    return toJs(info.Env(), runExpertGemmBench(toOptions(binding::optionsArg(info, 0))));
  });
}

}  // namespace afd::cuda
