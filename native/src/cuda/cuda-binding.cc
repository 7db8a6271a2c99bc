#include "cuda/cuda-binding.h"

#include "binding/js-convert.h"
#include "cuda/conformance.h"
#include "cuda/decode-bench.h"
#include "cuda/decoder-check.h"
#include "cuda/expert-gemm-binding.h"

namespace afd::cuda {
namespace {

template <typename Fn>
Napi::Value guarded(const Napi::CallbackInfo& info, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    Napi::Error::New(info.Env(), e.what()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
}

double optNumber(const Napi::Object& o, const char* name, double fallback) {
  if (!o.Has(name) || o.Get(name).IsUndefined()) return fallback;
  const Napi::Value v = o.Get(name);
  if (!v.IsNumber()) throw std::invalid_argument(std::string("option ") + name + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

Napi::Value Conformance(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    Napi::Object o = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(info.Env());
    const auto cases = runConformance(static_cast<int>(optNumber(o, "device", 0)),
                                      static_cast<uint64_t>(optNumber(o, "seed", 1)));
    Napi::Array out = Napi::Array::New(info.Env(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      const ConformanceCase& c = cases[i];
      Napi::Object r = Napi::Object::New(info.Env());
      r.Set("op", c.op);
      r.Set("shape", c.shape);
      r.Set("dtype", c.dtype);
      r.Set("relError", c.relError);
      r.Set("bound", c.bound);
      r.Set("unwritten", static_cast<double>(c.unwritten));
      r.Set("mismatches", static_cast<double>(c.mismatches));
      r.Set("passed", c.passed);
      out.Set(static_cast<uint32_t>(i), r);
    }
    return out;
  });
}

Napi::Value DecodeBench(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsObject()) throw std::invalid_argument("cudaDecodeBench(spec, options): spec must be a ModelLoadSpec");
    const ModelLoadSpec spec = binding::toModelLoadSpec(info[0].As<Napi::Object>());
    validateModelConfig(spec.config);
    Napi::Object o = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(info.Env());
    DecodeBenchOptions opt;
    if (o.Has("batches") && o.Get("batches").IsArray()) {
      Napi::Array a = o.Get("batches").As<Napi::Array>();
      opt.batches.clear();
      for (uint32_t i = 0; i < a.Length(); ++i) opt.batches.push_back(a.Get(i).As<Napi::Number>().Int32Value());
    }
    opt.context = static_cast<int>(optNumber(o, "context", opt.context));
    opt.warmupSteps = static_cast<int>(optNumber(o, "warmupSteps", opt.warmupSteps));
    opt.timedSteps = static_cast<int>(optNumber(o, "timedSteps", opt.timedSteps));
    opt.seed = static_cast<uint64_t>(optNumber(o, "seed", static_cast<double>(opt.seed)));
    opt.deviceIndex = static_cast<int>(optNumber(o, "device", opt.deviceIndex));
    opt.kvMemoryFraction = optNumber(o, "kvMemoryFraction", opt.kvMemoryFraction);
    const DecodeBenchResult r = runDecodeBench(spec.config, opt);
    Napi::Env env = info.Env();
    Napi::Object out = Napi::Object::New(env);
    out.Set("deviceName", r.deviceName);
    out.Set("multiProcessors", r.multiProcessors);
    out.Set("copyBandwidthGBs", r.copyBandwidthGBs);
    out.Set("weightBytes", static_cast<double>(r.weightBytes));
    out.Set("kvBytes", static_cast<double>(r.kvBytes));
    out.Set("setupSeconds", r.setupSeconds);
    out.Set("graphCaptures", static_cast<double>(r.graphCaptures));
    out.Set("graphHits", static_cast<double>(r.graphHits));
    out.Set("graphMisses", static_cast<double>(r.graphMisses));
    Napi::Array rows = Napi::Array::New(env, r.rows.size());
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const DecodeBenchRow& w = r.rows[i];
      Napi::Object j = Napi::Object::New(env);
      j.Set("batch", w.batch);
      j.Set("graph", w.graph);
      j.Set("msPerStep", w.msPerStep);
      j.Set("msPerStepP10", w.msPerStepP10);
      j.Set("msPerStepP90", w.msPerStepP90);
      j.Set("deviceMsPerStep", w.deviceMsPerStep);
      j.Set("tokensPerSecond", w.tokensPerSecond);
      j.Set("bytesPerStep", w.bytesPerStep);
      j.Set("activeExpertsPerLayer", w.activeExpertsPerLayer);
      j.Set("floorMsAtReference", w.floorMsAtReference);
      j.Set("floorMsAtMeasured", w.floorMsAtMeasured);
      j.Set("achievedGBs", w.achievedGBs);
      j.Set("ratioToFloor", w.ratioToFloor);
      j.Set("kernelsPerStep", static_cast<double>(w.kernelsPerStep));
      j.Set("tokensMatchEager", w.tokensMatchEager);
      rows.Set(static_cast<uint32_t>(i), j);
    }
    out.Set("rows", rows);
    return out;
  });
}

Napi::Value DecoderGenerate(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject()) {
      throw std::invalid_argument("cudaDecoderGenerate(spec, { promptIds, maxNewTokens, graphs?, device? })");
    }
    const ModelLoadSpec spec = binding::toModelLoadSpec(info[0].As<Napi::Object>());
    validateModelConfig(spec.config);
    Napi::Object o = info[1].As<Napi::Object>();
    if (!o.Get("promptIds").IsArray()) throw std::invalid_argument("cudaDecoderGenerate: promptIds must be an array");
    Napi::Array ids = o.Get("promptIds").As<Napi::Array>();
    std::vector<int32_t> prompt;
    for (uint32_t i = 0; i < ids.Length(); ++i) prompt.push_back(ids.Get(i).As<Napi::Number>().Int32Value());
    const bool graphs = !o.Has("graphs") || o.Get("graphs").ToBoolean().Value();
    const DecoderRun run = runDecoderGreedy(spec, prompt, static_cast<int>(optNumber(o, "maxNewTokens", 4)), graphs,
                                            static_cast<int>(optNumber(o, "device", 0)));
    Napi::Env env = info.Env();
    Napi::Object out = Napi::Object::New(env);
    Napi::Array tokens = Napi::Array::New(env, run.tokens.size());
    for (size_t i = 0; i < run.tokens.size(); ++i) tokens.Set(static_cast<uint32_t>(i), run.tokens[i]);
    out.Set("tokens", tokens);
    Napi::Float32Array logits = Napi::Float32Array::New(env, run.logits.size());
    std::copy(run.logits.begin(), run.logits.end(), logits.Data());
    out.Set("logits", logits);
    return out;
  });
}

}  // namespace

void registerCudaExports(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaConformance", Napi::Function::New(env, Conformance, "cudaConformance"));
  exports.Set("cudaDecodeBench", Napi::Function::New(env, DecodeBench, "cudaDecodeBench"));
  exports.Set("cudaDecoderGenerate", Napi::Function::New(env, DecoderGenerate, "cudaDecoderGenerate"));
  exports.Set("cudaExpertGemmBench", Napi::Function::New(env, cudaExpertGemmBench, "cudaExpertGemmBench"));
}

}  // namespace afd::cuda
