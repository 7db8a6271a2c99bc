#include "cuda/nccl/afd-gpu-binding.h"

#include "binding/js-convert.h"
#include "binding/js-options.h"
#include "cuda/decoder-check.h"
#include "cuda/nccl/afd-gpu-bench.h"

namespace afd::cuda {
namespace {

Napi::Value AfdGpuBench(const Napi::CallbackInfo& info) {
  return binding::guarded(info, [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject())
      throw std::invalid_argument("afdGpuBench(spec, options): spec must be a ModelLoadSpec and options an object");
    const ModelLoadSpec spec = binding::toModelLoadSpec(info[0].As<Napi::Object>());
    validateModelConfig(spec.config);
    const Napi::Object js = info[1].As<Napi::Object>();
    const binding::JsOptions o(js, "afdGpuBench");
    AfdGpuBenchOptions opt;
    opt.role = o.string("role", opt.role);
    opt.host = o.string("host", opt.host);
    opt.partialReportPath = o.string("partialReportPath", opt.partialReportPath);
    opt.port = o.integer("port", opt.port);
    opt.device = o.integer("device", opt.device);
    opt.transports = o.strings("transports", opt.transports);
    opt.pingBytes = o.integers("pingBytes", opt.pingBytes);
    opt.pingIters = o.integer("pingIters", opt.pingIters);
    opt.graphRounds = o.integer("graphRounds", opt.graphRounds);
    opt.graphReplays = o.integer("graphReplays", opt.graphReplays);
    opt.batches = o.integers("batches", opt.batches);
    opt.dboMinBatch = o.integer("dboMinBatch", opt.dboMinBatch);
    opt.context = o.integer("context", opt.context);
    opt.warmupSteps = o.integer("warmupSteps", opt.warmupSteps);
    opt.timedSteps = o.integer("timedSteps", opt.timedSteps);
    opt.seed = static_cast<uint64_t>(o.number("seed", static_cast<double>(opt.seed)));
    opt.stepDeadlineMs = o.integer("stepDeadlineMs", opt.stepDeadlineMs);
    opt.rendezvousTimeoutMs = o.integer("rendezvousTimeoutMs", opt.rendezvousTimeoutMs);
    opt.faultTest = o.boolean("faultTest", opt.faultTest);
    if (js.Has("ncclEnv") && js.Get("ncclEnv").IsObject()) {
      Napi::Object env = js.Get("ncclEnv").As<Napi::Object>();
      Napi::Array keys = env.GetPropertyNames();
      for (uint32_t i = 0; i < keys.Length(); ++i) {
        const std::string k = keys.Get(i).As<Napi::String>().Utf8Value();
        opt.ncclEnv[k] = env.Get(k).ToString().Utf8Value();
      }
    }
    return Napi::String::New(info.Env(), runAfdGpuBench(spec.config, opt));
  });
}

// afdSplitStageCheck(spec, { rows, exactGemm?, steps?, context?, seed?, device? }) -> result
// (one GPU, synthetic weights of the spec's shape; see cuda/decoder-check.h).
Napi::Value AfdSplitStageCheck(const Napi::CallbackInfo& info) {
  return binding::guarded(info, [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject())
      throw std::invalid_argument("afdSplitStageCheck(spec, { rows, exactGemm?, steps?, context?, seed?, device? })");
    const ModelLoadSpec spec = binding::toModelLoadSpec(info[0].As<Napi::Object>());
    validateModelConfig(spec.config);
    const binding::JsOptions o(info[1].As<Napi::Object>(), "afdSplitStageCheck");
    const SplitStageCheck r =
        runSplitStageCheck(spec.config, o.integer("rows", 64), o.boolean("exactGemm", true), o.integer("steps", 4),
                           o.integer("context", 512), static_cast<uint64_t>(o.number("seed", 11)), o.integer("device", 0));
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
  });
}

}  // namespace

void registerAfdGpuExports(Napi::Env env, Napi::Object exports) {
  exports.Set("afdGpuBench", Napi::Function::New(env, AfdGpuBench, "afdGpuBench"));
  exports.Set("afdSplitStageCheck", Napi::Function::New(env, AfdSplitStageCheck, "afdSplitStageCheck"));
}

}  // namespace afd::cuda
