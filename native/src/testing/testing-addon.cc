// Module entry of the testing addon (afd_native_testing.node): the product's exports,
// built from the same objects, plus what only tests use: runOp (one backend op), linkOptionsOf (the rank config as
// native reads it), the
// CUDA op conformance suite, and the "cpu-graphs" backend (the CPU backend with CUDA-graph
// capture emulated), which it registers in this addon's registry as it loads. Its
// TypeScript view is native/src/testing/testingAddon.ts.
#include <napi.h>

#include "binding/product-exports.h"
#include "cuda/testing/conformance-binding.h"
#include "runtime/registry.h"
#include "testing/capture-emulation-backend.h"
#include "testing/link-options-binding.h"
#include "testing/op-binding.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  afd::registry().addBackend("cpu-graphs", afd::createCaptureEmulationBackend);
  afd::binding::addProductExports(env, exports);
  exports.Set("runOp", Napi::Function::New(env, afd::binding::RunOp, "runOp"));
  exports.Set("linkOptionsOf", Napi::Function::New(env, afd::binding::LinkOptionsOf, "linkOptionsOf"));
  afd::cuda::registerConformanceExports(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(afd_native_testing, Init)
