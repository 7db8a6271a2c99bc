#include "cuda/cuda-binding.h"

#include "binding/js-convert.h"
#include "binding/js-options.h"
#include "cuda/conformance.h"
#include "cuda/decode-bench.h"
#include "cuda/decoder-check.h"
#include "cuda/expert-gemm-binding.h"

namespace afd::cuda {
namespace {

using binding::guarded;

Napi::Value Conformance(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const binding::JsOptions o(binding::optionsArg(info, 0), "cudaConformance");
    const auto cases = runConformance(o.integer("device", 0), static_cast<uint64_t>(o.number("seed", 1)));
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
    const binding::JsOptions o(binding::optionsArg(info, 1), "cudaDecodeBench");
    DecodeBenchOptions opt;
    opt.batches = o.integers("batches", opt.batches);
    opt.context = o.integer("context", opt.context);
    opt.warmupSteps = o.integer("warmupSteps", opt.warmupSteps);
    opt.timedSteps = o.integer("timedSteps", opt.timedSteps);
    opt.seed = static_cast<uint64_t>(o.number("seed", static_cast<double>(opt.seed)));
    opt.deviceIndex = o.integer("device", opt.deviceIndex);
    opt.kvMemoryFraction = o.number("kvMemoryFraction", opt.kvMemoryFraction);
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
    const binding::JsOptions o(info[1].As<Napi::Object>(), "cudaDecoderGenerate");
    const std::vector<int> ids = o.integers("promptIds", {});
    if (ids.empty()) throw std::invalid_argument("cudaDecoderGenerate: promptIds must be a non-empty array of token ids");
    const std::vector<int32_t> prompt(ids.begin(), ids.end());
    const DecoderRun run = runDecoderGreedy(spec, prompt, o.integer("maxNewTokens", 4), o.boolean("graphs", true),
                                            o.integer("device", 0));
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
