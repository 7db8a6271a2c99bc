// Module entry: registers every exported function and class. The TypeScript view of
// these exports is native/src/index.ts (checked by native/src/addon.test.ts).
#include <napi.h>

#include "binding/afd-binding.h"
#include "binding/engine-binding.h"
#include "binding/probe-binding.h"
#include "binding/process-binding.h"
#include "cuda/testing/conformance-binding.h"
#include "runtime/registry.h"
#include "testing/capture-emulation-backend.h"
#include "testing/op-binding.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, afd::binding::Probe, "probe"));
  exports.Set("Engine", afd::binding::EngineWrap::Define(env));
  exports.Set("AttentionLink", afd::binding::AttentionLinkWrap::Define(env));
  exports.Set("FfnServer", afd::binding::FfnServerWrap::Define(env));
  exports.Set("stuckNativeThreads", Napi::Function::New(env, afd::binding::StuckNativeThreads, "stuckNativeThreads"));
  exports.Set("exitNow", Napi::Function::New(env, afd::binding::ExitNow, "exitNow"));
  exports.Set("connectors", Napi::Function::New(env, afd::binding::Connectors, "connectors"));
  // Test-only entry points (testing/, cuda/testing/): op runs, the CUDA op conformance
  // suite and the "cpu-graphs" backend.
  afd::registry().addBackend("cpu-graphs", afd::createCaptureEmulationBackend);
  exports.Set("runOp", Napi::Function::New(env, afd::binding::RunOp, "runOp"));
  afd::cuda::registerConformanceExports(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(afd_native, Init)
