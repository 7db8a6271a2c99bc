// JS value -> C++ conversions for the engine binding, each failure an afd::Error that
// names the field (the TypeScript wrapper validates first; this is the last line). The
// step plan and result: step-convert.h.
#pragma once
#include <napi.h>

#include "model/model-config.h"
#include "runtime/engine/engine.h"

namespace afd::binding {

ModelLoadSpec toModelLoadSpec(const Napi::Object& spec);
EngineOptions toEngineOptions(const Napi::Value& options);

Napi::Object engineInfoToJs(Napi::Env env, const EngineInfo& info);
Napi::Object engineStatsToJs(Napi::Env env, EngineStats& stats);

}  // namespace afd::binding
