#include "cuda/testing/conformance-binding.h"

#include "binding/js-convert.h"
#include "binding/js-options.h"
#include "core/debug-env.h"
#include "cuda/testing/conformance.h"

namespace afd::cuda {
namespace {

using binding::guarded;

Napi::Value Conformance(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const binding::JsOptions o(binding::optionsArg(info, 0), "cudaConformance");
    CudaOptions cudaOptions;
    applyDebugEnv(cudaOptions);  // the defaults and the debugging overrides, as an engine without CUDA options gets them
    const auto cases = runConformance(o.integer("device", 0), cudaOptions, static_cast<uint64_t>(o.number("seed", 1)),
                                      o.string("family", ""));
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

}  // namespace

void registerConformanceExports(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaConformance", Napi::Function::New(env, Conformance, "cudaConformance"));
}

}  // namespace afd::cuda
