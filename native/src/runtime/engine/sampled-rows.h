// The host settings of one step's sampled rows (one per sequence with sampleMask 1, in
// batch order), gathered from the plan for the backend's processLogits and sample: the
// sampling settings, the bias and penalty lists of the rows that have any (other rows'
// lists are empty), the allowed-token mask row of each row (a step without mask rows
// carries none), and the log-probability request of the rows whose sequence asks
// numLogprobs >= 0, with the TokenLogprobs the backend fills.
#pragma once
#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "runtime/engine/step-plan.h"

namespace afd {

class SampledRows {
 public:
  // samplePositions: [numSampled] the position of each row's token (its sequence's contextLen).
  // vocabSize: the logits' width (the mask rows' words).
  void build(const StepPlan& plan, const std::vector<int32_t>& samplePositions, int64_t vocabSize);

  // Any row with a bias, a penalty on or a mask row: run processLogits with processing().
  bool processes() const { return processes_ || masked_; }
  LogitProcessing processing() const;
  // Some row has a mask row: the rows of the plan's tokenMask (or of the deferred one,
  // given by setMask before processing()) apply.
  bool masked() const { return masked_; }
  // The mask rows (numMaskRows x wordsPerRow words), held by the caller until sampling ends.
  void setMask(const int32_t* mask) { mask_ = mask; }
  const int32_t* maskData() const { return mask_; }
  // Sampling settings, with the log-probability request when wantsLogprobs().
  SamplingBatch batch();
  // A sequence of the step asks numLogprobs >= 0: the result carries `logprobs`.
  bool wantsLogprobs() const { return wantsLogprobs_; }
  // The penalty slots this step seeds (every sequence of the plan with seed 1, sampled or
  // not), for the backend's seedPenaltySlots before processing(); numSlots 0 = none.
  PenaltySeeds seeds() const;
  TokenLogprobs& logprobs() { return logprobs_; }

 private:
  void buildSeeds(const StepPlan& plan);

  // Sampling settings per row.
  std::vector<float> temperature_, topP_, minP_;
  std::vector<int32_t> topK_, positions_;
  std::vector<uint32_t> seeds_;
  // Logit processing per row (CSR over the rows).
  bool processes_ = false;
  std::vector<float> presence_, frequency_, repetition_, biasValues_;
  std::vector<int32_t> seenOffsets_, seenIds_, seenCounts_, biasOffsets_, biasIds_;
  // Penalty slots per row: the one processLogits reads (-1 where the row's penalties are
  // off), the one the sampler counts into; slotted_: some row has one. The step's seeds.
  bool slotted_ = false;
  std::vector<int32_t> processSlot_, countSlot_;
  std::vector<int32_t> seedSlots_, seedOffsets_, seedIds_, seedCounts_;
  // Allowed-token masks: each row's mask row (-1 none), the mask rows.
  bool masked_ = false;
  std::vector<int32_t> maskRow_;
  const int32_t* mask_ = nullptr;
  int numMaskRows_ = 0, maskWords_ = 0;
  // Log-probabilities: the rows that ask, their k and temperature; the result rows.
  bool wantsLogprobs_ = false;
  std::vector<int32_t> lpRows_, lpTopK_;
  std::vector<float> lpTemperature_;
  LogprobRequest request_;
  TokenLogprobs logprobs_;
};

// True when sequence s of the plan has a bias or a penalty that changes its logits.
bool processesLogits(const StepExtras& x, int s);
// Sequence s's penalty slot, -1 when none (or the plan has no slots).
int32_t penaltySlotOf(const StepExtras& x, int s);

}  // namespace afd
