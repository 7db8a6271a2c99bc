// Module entry: registers every exported function and class. The TypeScript view of
// these exports is native/src/index.ts (checked by native/src/addon.test.ts).
#include <napi.h>

#include "binding/probe-binding.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, afd::binding::Probe, "probe"));
  return exports;
}

}  // namespace

NODE_API_MODULE(afd_native, Init)
