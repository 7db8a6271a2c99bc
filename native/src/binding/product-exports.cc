#include "binding/product-exports.h"

#include "binding/afd-binding.h"
#include "binding/engine-binding.h"
#include "binding/probe-binding.h"
#include "binding/process-binding.h"

namespace afd::binding {

void addProductExports(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Probe, "probe"));
  exports.Set("connectors", Napi::Function::New(env, Connectors, "connectors"));
  exports.Set("Engine", EngineWrap::Define(env));
  exports.Set("AttentionLink", AttentionLinkWrap::Define(env));
  exports.Set("FfnServer", FfnServerWrap::Define(env));
  exports.Set("stuckNativeThreads", Napi::Function::New(env, StuckNativeThreads, "stuckNativeThreads"));
  exports.Set("exitNow", Napi::Function::New(env, ExitNow, "exitNow"));
}

}  // namespace afd::binding
