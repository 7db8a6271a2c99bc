#include "cuda/expert-gemm-binding.h"

#include <stdexcept>
#include <string>

#include "cuda/expert-gemm-bench.h"

namespace afd::cuda {
namespace {

int optInt(const Napi::Object& o, const char* name, int fallback) {
  if (!o.Has(name) || o.Get(name).IsUndefined()) return fallback;
  const Napi::Value v = o.Get(name);
  if (!v.IsNumber()) throw std::invalid_argument(std::string("cudaExpertGemmBench: option ") + name + " must be a number");
  return v.As<Napi::Number>().Int32Value();
}

ExpertGemmBenchOptions toOptions(const Napi::Object& o) {
  ExpertGemmBenchOptions opt;
  if (o.Has("batches") && !o.Get("batches").IsUndefined()) {
    if (!o.Get("batches").IsArray()) throw std::invalid_argument("cudaExpertGemmBench: batches must be an array of numbers");
    Napi::Array a = o.Get("batches").As<Napi::Array>();
    opt.batches.clear();
    for (uint32_t i = 0; i < a.Length(); ++i) opt.batches.push_back(a.Get(i).As<Napi::Number>().Int32Value());
  }
  opt.numExperts = optInt(o, "numExperts", opt.numExperts);
  opt.hidden = optInt(o, "hidden", opt.hidden);
  opt.intermediate = optInt(o, "intermediate", opt.intermediate);
  opt.topK = optInt(o, "topK", opt.topK);
  opt.layers = optInt(o, "layers", opt.layers);
  opt.warmup = optInt(o, "warmup", opt.warmup);
  opt.iterations = optInt(o, "iterations", opt.iterations);
  opt.seed = static_cast<uint64_t>(optInt(o, "seed", static_cast<int>(opt.seed)));
  opt.deviceIndex = optInt(o, "device", opt.deviceIndex);
  if (o.Has("routing") && !o.Get("routing").IsUndefined()) opt.routing = o.Get("routing").ToString().Utf8Value();
  if (o.Has("perExpert") && !o.Get("perExpert").IsUndefined()) opt.perExpert = o.Get("perExpert").ToBoolean().Value();
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
  try {
    const Napi::Object o =
        info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(info.Env());
    return toJs(info.Env(), runExpertGemmBench(toOptions(o)));
  } catch (const std::exception& e) {
    Napi::Error::New(info.Env(), e.what()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
}

}  // namespace afd::cuda
