#pragma once
#include <napi.h>

namespace afd::binding {
Napi::Value Probe(const Napi::CallbackInfo& info);
}
