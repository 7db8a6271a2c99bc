// JS value -> C++ conversions for the engine binding, each failure an afd::Error that
// names the field (the TypeScript wrapper validates first; this is the last line).
#pragma once
#include <napi.h>

#include "model/model-config.h"
#include "runtime/engine/engine.h"

namespace afd::binding {

ModelLoadSpec toModelLoadSpec(const Napi::Object& spec);
EngineOptions toEngineOptions(const Napi::Value& options);

// A StepPlan plus copies of its arrays (the JS arrays may change after the call returns).
struct OwnedStepPlan {
  StepPlan plan;
  std::vector<int32_t> tokenIds, positions, tokenOffsets, contextLens, blockTables, topK;
  std::vector<uint8_t> sampleMask;
  std::vector<float> temperature, topP;
  std::vector<uint32_t> seeds;
};
void toStepPlan(const Napi::Object& plan, OwnedStepPlan& out);

Napi::Object engineInfoToJs(Napi::Env env, const EngineInfo& info);
Napi::Object engineStatsToJs(Napi::Env env, EngineStats& stats);

}  // namespace afd::binding
