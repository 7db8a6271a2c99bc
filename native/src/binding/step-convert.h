// The step plan in (StepPlan of shared/src/engine/step.ts, its extras included) and the
// step result out (token ids, logits, log-probability rows as typed arrays), for the
// engine binding. Each failure is an afd::Error naming the field.
#pragma once
#include <napi.h>

#include <vector>

#include "runtime/engine/step-plan.h"

namespace afd::binding {

// A StepPlan plus copies of its arrays (the JS arrays may change after the call returns).
struct OwnedStepPlan {
  StepPlan plan;
  std::vector<int32_t> tokenIds, positions, tokenOffsets, contextLens, blockTables, topK, stateSlots;
  std::vector<uint8_t> sampleMask;
  std::vector<float> temperature, topP, minP;
  std::vector<uint32_t> seeds;
  // plan.extras points at `extras` when the JS plan has them.
  StepExtras extras;
  std::vector<float> presencePenalty, frequencyPenalty, repetitionPenalty, biasValues;
  std::vector<int32_t> seenOffsets, seenTokenIds, seenCounts, biasOffsets, biasTokenIds, numLogprobs, numPromptLogprobs,
      nextPromptTokenIds, maskRows, tokenMask, penaltySlots;
  std::vector<uint8_t> penaltySlotSeeds;
};
void toStepPlan(const Napi::Object& plan, OwnedStepPlan& out);

// StepResult as the JS object of shared/src/engine/step.ts (logprobs fields only when set).
Napi::Object stepResultToJs(Napi::Env env, const StepResult& result);

}  // namespace afd::binding
