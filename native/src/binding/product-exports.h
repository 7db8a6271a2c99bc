// The product addon's exports (afd_native.node; its TypeScript view is native/src/addon.ts,
// checked by native/src/addon.test.ts). The testing addon (afd_native_testing.node,
// testing/testing-addon.cc) exports the same, plus its test entry points.
#pragma once
#include <napi.h>

namespace afd::binding {

void addProductExports(Napi::Env env, Napi::Object exports);

}  // namespace afd::binding
