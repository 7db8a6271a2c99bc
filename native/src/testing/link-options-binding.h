// linkOptionsOf(config): what the binding's one conversion of a rank config
// (binding/rank-config.h) hands the attention link and the FFN loop, as a plain object,
// so tests can check the derived values (device-buffer tokens, FFN graphs, the parsed
// connector and exchange) without a GPU. Testing addon only.
#pragma once
#include <napi.h>

namespace afd::binding {
Napi::Value LinkOptionsOf(const Napi::CallbackInfo& info);
}  // namespace afd::binding
