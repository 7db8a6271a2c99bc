// The last guard on a plan's StepExtras, the rules of shared/src/engine/stepExtrasCheck.ts
// (the binding has checked the array lengths): CSR offsets, ids inside the vocabulary and
// distinct within a sequence's list, penalties finite (repetition > 0), k in -1..20, mask
// rows on sampled sequences only, each row once, and the token mask's length.
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
  // Distinct per sequence: one stamp per vocabulary id, a new stamp per sequence (O(entries);
  // sorting each list cost ~2 ms a step at 64 sequences of ~1,000 seen tokens).
  thread_local std::vector<uint32_t> stamps;
  thread_local uint32_t stamp = 0;
  if (stamps.size() < static_cast<size_t>(vocabSize)) {
    stamps.assign(static_cast<size_t>(vocabSize), 0);
    stamp = 0;
  }
  for (int s = 0; s < numSeqs; ++s) {
    if (++stamp == 0) {  // wrapped: forget every stamp
      std::fill(stamps.begin(), stamps.end(), 0);
      stamp = 1;
    }
    for (int i = offsets[s]; i < offsets[s + 1]; ++i) {
      uint32_t& mark = stamps[static_cast<size_t>(ids[i])];
      AFD_CHECK(mark != stamp, "step plan: extras." << name << "TokenIds of sequence " << s << " list token " << ids[i]
                                                     << " twice; expected distinct ids (one entry per token)");
      mark = stamp;
    }
  }
}

// maskRows: -1 or a row in [0, M) (M: the sequences with a row), each once, on sampled
// sequences only; tokenMask (when given): M rows of ceil(vocabSize / 32) words.
void checkMask(const StepExtras& x, int numSeqs, const uint8_t* sampleMask, int64_t vocabSize) {
  if (x.maskRows == nullptr) return;  // a caller of the C++ API without masks
  int m = 0;
  for (int s = 0; s < numSeqs; ++s) m += x.maskRows[s] >= 0 ? 1 : 0;
  std::vector<bool> used(static_cast<size_t>(m), false);
  for (int s = 0; s < numSeqs; ++s) {
    const int32_t r = x.maskRows[s];
    if (r == -1) continue;
    AFD_CHECK(r >= 0 && r < m, "step plan: extras.maskRows[" << s << "] is " << r << "; expected -1 (none) or a row in [0, " << m
                                                             << ") (" << m << " sequences have a row)");
    AFD_CHECK(!used[r], "step plan: extras.maskRows[" << s << "] is " << r << ", a row another sequence uses; expected each row once");
    used[r] = true;
    AFD_CHECK(sampleMask[s] == 1, "step plan: extras.maskRows[" << s << "] is " << r << " but sequence " << s
                                                                << " samples no token (sampleMask 0); only sampled sequences take a mask row");
  }
  if (x.tokenMask == nullptr) return;
  const int64_t words = maskWordsOf(vocabSize);
  AFD_CHECK(m > 0, "step plan: extras.tokenMask is given but no sequence has a mask row (maskRows all -1)");
  AFD_CHECK(x.tokenMaskLength == m * words, "step plan: extras.tokenMask has " << x.tokenMaskLength << " words, expected " << m << " rows x "
                                                                               << words << " words (ceil(vocabSize " << vocabSize
                                                                               << " / 32)) = " << m * words);
}

// Penalty slots: -1 or a slot in [0, kMaxPenaltySlots), no slot twice in a step (the sampler
// counts each slot's token in parallel); a seed only on a sequence with a slot; a sequence
// that reads its slot without seeding it sends no seen list (the slot holds it).
void checkPenaltySlots(const StepExtras& x, int numSeqs) {
  if (x.penaltySlots == nullptr) return;
  AFD_CHECK(x.penaltySlotSeeds != nullptr, "step plan: extras.penaltySlots without penaltySlotSeeds; give both or neither");
  std::vector<int32_t> used;
  for (int s = 0; s < numSeqs; ++s) {
    const int32_t k = x.penaltySlots[s];
    const uint8_t seed = x.penaltySlotSeeds[s];
    AFD_CHECK(k >= -1 && k < kMaxPenaltySlots, "step plan: extras.penaltySlots[" << s << "] is " << k << "; expected -1 (none) or a slot in [0, "
                                                                                  << kMaxPenaltySlots << ")");
    AFD_CHECK(seed <= 1, "step plan: extras.penaltySlotSeeds[" << s << "] is " << int(seed) << "; expected 0 or 1");
    AFD_CHECK(k >= 0 || seed == 0, "step plan: extras.penaltySlotSeeds[" << s << "] is 1 but sequence " << s << " has no penalty slot (-1)");
    AFD_CHECK(k < 0 || seed == 1 || x.seenOffsets[s + 1] == x.seenOffsets[s],
              "step plan: sequence " << s << " reads penalty slot " << k << " (penaltySlotSeeds 0) and also sends "
                                     << x.seenOffsets[s + 1] - x.seenOffsets[s] << " seen tokens; send them only with a seed (1)");
    if (k >= 0) used.push_back(k);
  }
  std::sort(used.begin(), used.end());
  const auto twice = std::adjacent_find(used.begin(), used.end());
  AFD_CHECK(twice == used.end(), "step plan: extras.penaltySlots gives slot " << *twice << " to two sequences; expected one slot per sequence");
}

}  // namespace

void validateStepExtras(const StepExtras& x, int numSeqs, const uint8_t* sampleMask, int64_t vocabSize) {
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
  checkMask(x, numSeqs, sampleMask, vocabSize);
  checkPenaltySlots(x, numSeqs);
}

void checkMaskRowsAllowAToken(const int32_t* mask, int rows, int64_t vocabSize) {
  const int64_t words = maskWordsOf(vocabSize), tail = vocabSize - (words - 1) * 32;  // tokens of the last word
  const uint32_t lastBits = tail == 32 ? ~0u : (1u << tail) - 1u;
  for (int r = 0; r < rows; ++r) {
    const int32_t* row = mask + static_cast<int64_t>(r) * words;
    bool any = (static_cast<uint32_t>(row[words - 1]) & lastBits) != 0;
    for (int64_t w = 0; !any && w + 1 < words; ++w) any = row[w] != 0;
    AFD_CHECK(any, "token mask: row " << r << " allows no token of the vocabulary [0, " << vocabSize
                                      << "); a mask row must allow at least one (bit t % 32 of word t / 32 set)");
  }
}

}  // namespace afd
