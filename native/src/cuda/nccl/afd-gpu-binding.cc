#include "cuda/nccl/afd-gpu-binding.h"

#include "binding/js-convert.h"
#include "cuda/decoder-check.h"
#include "cuda/nccl/afd-gpu-bench.h"

namespace afd::cuda {
namespace {

double optNumber(const Napi::Object& o, const char* name, double fallback) {
  if (!o.Has(name) || o.Get(name).IsUndefined()) return fallback;
  const Napi::Value v = o.Get(name);
  if (!v.IsNumber()) throw std::invalid_argument(std::string("afdGpuBench: option ") + name + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

std::vector<int> optInts(const Napi::Object& o, const char* name, std::vector<int> fallback) {
  if (!o.Has(name) || o.Get(name).IsUndefined()) return fallback;
  if (!o.Get(name).IsArray()) throw std::invalid_argument(std::string("afdGpuBench: option ") + name + " must be an array of numbers");
  Napi::Array a = o.Get(name).As<Napi::Array>();
  std::vector<int> out;
  for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(a.Get(i).As<Napi::Number>().Int32Value());
  return out;
}

std::string optString(const Napi::Object& o, const char* name, const std::string& fallback) {
  if (!o.Has(name) || o.Get(name).IsUndefined()) return fallback;
  if (!o.Get(name).IsString()) throw std::invalid_argument(std::string("afdGpuBench: option ") + name + " must be a string");
  return o.Get(name).As<Napi::String>().Utf8Value();
}

Napi::Value AfdGpuBench(const Napi::CallbackInfo& info) {
  try {
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject())
      throw std::invalid_argument("afdGpuBench(spec, options): spec must be a ModelLoadSpec and options an object");
    const ModelLoadSpec spec = binding::toModelLoadSpec(info[0].As<Napi::Object>());
    validateModelConfig(spec.config);
    Napi::Object o = info[1].As<Napi::Object>();
    AfdGpuBenchOptions opt;
    opt.role = optString(o, "role", opt.role);
    opt.host = optString(o, "host", opt.host);
    opt.partialReportPath = optString(o, "partialReportPath", opt.partialReportPath);
    opt.port = static_cast<int>(optNumber(o, "port", opt.port));
    opt.device = static_cast<int>(optNumber(o, "device", opt.device));
    if (o.Has("transports") && o.Get("transports").IsArray()) {
      Napi::Array a = o.Get("transports").As<Napi::Array>();
      opt.transports.clear();
      for (uint32_t i = 0; i < a.Length(); ++i) opt.transports.push_back(a.Get(i).As<Napi::String>().Utf8Value());
    }
    opt.pingBytes = optInts(o, "pingBytes", opt.pingBytes);
    opt.pingIters = static_cast<int>(optNumber(o, "pingIters", opt.pingIters));
    opt.graphRounds = static_cast<int>(optNumber(o, "graphRounds", opt.graphRounds));
    opt.graphReplays = static_cast<int>(optNumber(o, "graphReplays", opt.graphReplays));
    opt.batches = optInts(o, "batches", opt.batches);
    opt.dboMinBatch = static_cast<int>(optNumber(o, "dboMinBatch", opt.dboMinBatch));
    opt.context = static_cast<int>(optNumber(o, "context", opt.context));
    opt.warmupSteps = static_cast<int>(optNumber(o, "warmupSteps", opt.warmupSteps));
    opt.timedSteps = static_cast<int>(optNumber(o, "timedSteps", opt.timedSteps));
    opt.seed = static_cast<uint64_t>(optNumber(o, "seed", static_cast<double>(opt.seed)));
    opt.stepDeadlineMs = static_cast<int>(optNumber(o, "stepDeadlineMs", opt.stepDeadlineMs));
    opt.rendezvousTimeoutMs = static_cast<int>(optNumber(o, "rendezvousTimeoutMs", opt.rendezvousTimeoutMs));
    if (o.Has("faultTest") && o.Get("faultTest").IsBoolean()) opt.faultTest = o.Get("faultTest").As<Napi::Boolean>();
    if (o.Has("ncclEnv") && o.Get("ncclEnv").IsObject()) {
      Napi::Object env = o.Get("ncclEnv").As<Napi::Object>();
      Napi::Array keys = env.GetPropertyNames();
      for (uint32_t i = 0; i < keys.Length(); ++i) {
        const std::string k = keys.Get(i).As<Napi::String>().Utf8Value();
        opt.ncclEnv[k] = env.Get(k).ToString().Utf8Value();
      }
    }
    return Napi::String::New(info.Env(), runAfdGpuBench(spec.config, opt));
  } catch (const std::exception& e) {
    Napi::Error::New(info.Env(), e.what()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
}

// afdSplitStageCheck(spec, { rows, exactGemm?, steps?, context?, seed?, device? }) -> result
// (one GPU, synthetic weights of the spec's shape; see cuda/decoder-check.h).
Napi::Value AfdSplitStageCheck(const Napi::CallbackInfo& info) {
  try {
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject())
      throw std::invalid_argument("afdSplitStageCheck(spec, { rows, exactGemm?, steps?, context?, seed?, device? })");
    const ModelLoadSpec spec = binding::toModelLoadSpec(info[0].As<Napi::Object>());
    validateModelConfig(spec.config);
    Napi::Object o = info[1].As<Napi::Object>();
    const bool exact = !o.Has("exactGemm") || o.Get("exactGemm").ToBoolean().Value();
    const SplitStageCheck r = runSplitStageCheck(
        spec.config, static_cast<int>(optNumber(o, "rows", 64)), exact, static_cast<int>(optNumber(o, "steps", 4)),
        static_cast<int>(optNumber(o, "context", 512)), static_cast<uint64_t>(optNumber(o, "seed", 11)),
        static_cast<int>(optNumber(o, "device", 0)));
    Napi::Env env = info.Env();
    Napi::Object out = Napi::Object::New(env);
    out.Set("rows", r.rows);
    Napi::Array stages = Napi::Array::New(env, 2);
    stages.Set(0u, r.stageRows[0]);
    stages.Set(1u, r.stageRows[1]);
    out.Set("stageRows", stages);
    out.Set("exactGemm", r.exactGemm);
    out.Set("steps", r.steps);
    out.Set("mismatchedSteps", r.mismatchedSteps);
    out.Set("mismatchedTokens", r.mismatchedTokens);
    out.Set("logitStepsBitEqual", r.logitStepsBitEqual);
    out.Set("maxLogitAbsDiff", r.maxLogitAbsDiff);
    return out;
  } catch (const std::exception& e) {
    Napi::Error::New(info.Env(), e.what()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
}

}  // namespace

void registerAfdGpuExports(Napi::Env env, Napi::Object exports) {
  exports.Set("afdGpuBench", Napi::Function::New(env, AfdGpuBench, "afdGpuBench"));
  exports.Set("afdSplitStageCheck", Napi::Function::New(env, AfdSplitStageCheck, "afdSplitStageCheck"));
}

}  // namespace afd::cuda
