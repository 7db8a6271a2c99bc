// Module entry of the product addon (afd_native.node): the product's exports only. Test
// entry points live in the testing addon (testing/testing-addon.cc).
#include <napi.h>

#include "binding/product-exports.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  afd::binding::addProductExports(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(afd_native, Init)
