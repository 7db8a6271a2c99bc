// The last guard on a plan's StepExtras, the rules of shared/src/engine/stepExtrasCheck.ts
// (the binding has checked the array lengths): CSR offsets, ids inside the vocabulary and
// distinct within a sequence's list, penalties finite (repetition > 0), k in -1..20.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/logit-ops.h"
#include "runtime/engine/step-plan.h"

namespace afd {
namespace {

// One CSR list: offsets from 0, never decreasing, ending at the entry count; ids in the
// vocabulary, no id twice in one sequence (backends apply a sequence's entries in parallel).
void checkList(const char* name, const int32_t* offsets, const int32_t* ids, int count, int numSeqs, int64_t vocabSize) {
  AFD_CHECK(offsets[0] == 0, "step plan: extras." << name << "Offsets[0] is " << offsets[0] << ", expected 0");
  for (int s = 0; s < numSeqs; ++s)
    AFD_CHECK(offsets[s + 1] >= offsets[s], "step plan: extras." << name << "Offsets decreases at sequence " << s << " ("
                                                                 << offsets[s] << " -> " << offsets[s + 1] << ")");
  AFD_CHECK(offsets[numSeqs] == count, "step plan: extras." << name << "Offsets[numSeqs] is " << offsets[numSeqs]
                                                            << ", expected the entry count " << count);
  for (int i = 0; i < count; ++i)
    AFD_CHECK(ids[i] >= 0 && ids[i] < vocabSize, "step plan: extras." << name << "TokenIds[" << i << "] is " << ids[i]
                                                                      << ", outside the vocabulary [0, " << vocabSize << ")");
  std::vector<int32_t> sorted;
  for (int s = 0; s < numSeqs; ++s) {
    sorted.assign(ids + offsets[s], ids + offsets[s + 1]);
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    AFD_CHECK(dup == sorted.end(), "step plan: extras." << name << "TokenIds of sequence " << s << " list token " << *dup
                                                        << " twice; expected distinct ids (one entry per token)");
  }
}

}  // namespace

void validateStepExtras(const StepExtras& x, int numSeqs, int64_t vocabSize) {
  checkList("seen", x.seenOffsets, x.seenTokenIds, x.numSeen, numSeqs, vocabSize);
  checkList("bias", x.biasOffsets, x.biasTokenIds, x.numBias, numSeqs, vocabSize);
  for (int i = 0; i < x.numSeen; ++i)
    AFD_CHECK(x.seenCounts[i] >= 0, "step plan: extras.seenCounts[" << i << "] is " << x.seenCounts[i] << "; expected >= 0 (0 = prompt only)");
  for (int s = 0; s < numSeqs; ++s) {
    AFD_CHECK(std::isfinite(x.presencePenalty[s]) && std::isfinite(x.frequencyPenalty[s]),
              "step plan: extras: sequence " << s << " has a non-finite presence or frequency penalty");
    AFD_CHECK(std::isfinite(x.repetitionPenalty[s]) && x.repetitionPenalty[s] > 0,
              "step plan: extras.repetitionPenalty[" << s << "] is " << x.repetitionPenalty[s] << "; expected a finite number > 0 (1 = off)");
    AFD_CHECK(x.numLogprobs[s] >= -1 && x.numLogprobs[s] <= kMaxTopLogprobs,
              "step plan: extras.numLogprobs[" << s << "] is " << x.numLogprobs[s] << "; expected -1 (none) or 0.." << kMaxTopLogprobs);
    AFD_CHECK(x.numPromptLogprobs[s] >= -1 && x.numPromptLogprobs[s] <= kMaxTopLogprobs,
              "step plan: extras.numPromptLogprobs[" << s << "] is " << x.numPromptLogprobs[s] << "; expected -1 (none) or 0.."
                                                      << kMaxTopLogprobs);
    AFD_CHECK(x.nextPromptTokenIds[s] >= -1 && x.nextPromptTokenIds[s] < vocabSize,
              "step plan: extras.nextPromptTokenIds[" << s << "] is " << x.nextPromptTokenIds[s] << "; expected -1 or a token id");
  }
  for (int i = 0; i < x.numBias; ++i)
    AFD_CHECK(!std::isnan(x.biasValues[i]), "step plan: extras.biasValues[" << i << "] is NaN; expected a number (-Infinity bans the token)");
}

}  // namespace afd
