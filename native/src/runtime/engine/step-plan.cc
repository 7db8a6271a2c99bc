#include "runtime/engine/step-plan.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace afd {

// The last guard behind the TypeScript check (shared/src/engine/stepPlanCheck.ts): the
// same rules, for callers of the raw addon. The binding has checked the array lengths.
void validateStepPlan(const StepPlan& p, int64_t vocabSize, int kvBlockSize, int numKvBlocks) {
  AFD_CHECK(p.numSeqs >= 1, "step plan: numSeqs must be at least 1 (got " << p.numSeqs << ")");
  AFD_CHECK(p.tokenOffsets[0] == 0, "step plan: tokenOffsets[0] must be 0");
  AFD_CHECK(p.tokenOffsets[p.numSeqs] == p.numTokens,
            "step plan: tokenOffsets[numSeqs] = " << p.tokenOffsets[p.numSeqs] << " but there are " << p.numTokens << " tokens");
  AFD_CHECK(p.stageSplit >= 1 && p.stageSplit <= p.numSeqs,
            "step plan: stageSplit " << p.stageSplit << " must be in [1, numSeqs = " << p.numSeqs << "]");
  AFD_CHECK(p.maxBlocksPerSeq >= 1, "step plan: maxBlocksPerSeq must be at least 1");
  for (int s = 0; s < p.numSeqs; ++s) {
    const int32_t b = p.tokenOffsets[s], e = p.tokenOffsets[s + 1];
    AFD_CHECK(e > b, "step plan: sequence " << s << " has no tokens (tokenOffsets must strictly increase)");
    AFD_CHECK(e <= p.numTokens, "step plan: tokenOffsets[" << s + 1 << "] = " << e << " exceeds the " << p.numTokens << " tokens");
    const int32_t ctx = p.contextLens[s];
    AFD_CHECK(ctx >= e - b, "step plan: sequence " << s << " has contextLen " << ctx << " < its " << (e - b) << " new tokens");
    AFD_CHECK((static_cast<int64_t>(ctx) + kvBlockSize - 1) / kvBlockSize <= p.maxBlocksPerSeq,
              "step plan: sequence " << s << " needs " << (ctx + kvBlockSize - 1) / kvBlockSize << " blocks of " << kvBlockSize
                                     << " tokens for contextLen " << ctx << " but maxBlocksPerSeq is " << p.maxBlocksPerSeq);
    for (int32_t t = b; t < e; ++t) {
      AFD_CHECK(p.positions[t] == ctx - (e - t), "step plan: token " << t << " of sequence " << s << " has position "
                                                                     << p.positions[t] << ", expected " << ctx - (e - t)
                                                                     << " (new tokens fill positions [contextLen - n, contextLen))");
      AFD_CHECK(p.tokenIds[t] >= 0 && p.tokenIds[t] < vocabSize,
                "step plan: token id " << p.tokenIds[t] << " at index " << t << " is outside the vocabulary [0, " << vocabSize << ")");
    }
    for (int32_t j = 0; j < (ctx + kvBlockSize - 1) / kvBlockSize; ++j) {
      const int32_t blk = p.blockTables[static_cast<int64_t>(s) * p.maxBlocksPerSeq + j];
      AFD_CHECK(blk >= 0 && blk < numKvBlocks, "step plan: block table of sequence " << s << " slot " << j << " holds block "
                                                                                     << blk << ", outside [0, " << numKvBlocks << ")");
    }
    // Sampling settings are checked whether or not the sequence samples, as in stepPlanCheck.ts.
    AFD_CHECK(p.sampleMask[s] <= 1, "step plan: sampleMask[" << s << "] is " << int(p.sampleMask[s]) << "; expected 0 or 1");
    AFD_CHECK(std::isfinite(p.temperature[s]) && p.temperature[s] >= 0,
              "step plan: temperature[" << s << "] is " << p.temperature[s] << "; expected a finite number >= 0");
    AFD_CHECK(p.topK[s] >= 0, "step plan: topK[" << s << "] is " << p.topK[s] << "; expected >= 0");
    AFD_CHECK(p.topP[s] > 0 && p.topP[s] <= 1, "step plan: topP[" << s << "] is " << p.topP[s] << "; expected (0, 1]");
    AFD_CHECK(p.minP == nullptr || (p.minP[s] >= 0 && p.minP[s] <= 1),
              "step plan: minP[" << s << "] is " << p.minP[s] << "; expected [0, 1] (0 = off)");
  }
  if (p.extras != nullptr) validateStepExtras(*p.extras, p.numSeqs, p.sampleMask, vocabSize);
}

int numMaskRows(const StepPlan& plan) {
  int m = 0;
  for (int s = 0; plan.extras != nullptr && plan.extras->maskRows != nullptr && s < plan.numSeqs; ++s) m += plan.extras->maskRows[s] >= 0 ? 1 : 0;
  return m;
}

bool defersTokenMask(const StepPlan& plan) {
  return plan.extras != nullptr && plan.extras->tokenMask == nullptr && numMaskRows(plan) > 0;
}

void validateStateSlots(const StepPlan& p, int numStateSlots) {
  if (numStateSlots == 0) {
    AFD_CHECK(p.stateSlots == nullptr, "step plan: stateSlots given, but this model has no linear-attention (gdn) layer to keep state for");
    return;
  }
  AFD_CHECK(p.stateSlots != nullptr, "step plan: this model has linear-attention (gdn) layers; give stateSlots, one recurrent-state slot "
                                     "per sequence in [0, " << numStateSlots << ")");
  std::vector<bool> used(static_cast<size_t>(numStateSlots), false);
  for (int s = 0; s < p.numSeqs; ++s) {
    const int32_t k = p.stateSlots[s];
    AFD_CHECK(k >= 0 && k < numStateSlots, "step plan: stateSlots[" << s << "] = " << k << " is outside the engine's " << numStateSlots
                                                                     << " state slots (numStateSlots)");
    AFD_CHECK(!used[static_cast<size_t>(k)], "step plan: stateSlots[" << s << "] = " << k << " is used by two sequences of the step");
    used[static_cast<size_t>(k)] = true;
  }
}

}  // namespace afd
