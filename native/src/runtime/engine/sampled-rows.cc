#include "runtime/engine/sampled-rows.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace afd {

bool processesLogits(const StepExtras& x, int s) {
  const bool penalties = x.presencePenalty[s] != 0 || x.frequencyPenalty[s] != 0 || x.repetitionPenalty[s] != 1;
  const bool seen = x.seenOffsets[s + 1] > x.seenOffsets[s] || penaltySlotOf(x, s) >= 0;
  return (penalties && seen) || x.biasOffsets[s + 1] > x.biasOffsets[s];
}

int32_t penaltySlotOf(const StepExtras& x, int s) { return x.penaltySlots != nullptr ? x.penaltySlots[s] : -1; }

void SampledRows::buildSeeds(const StepPlan& plan) {
  seedSlots_.clear();
  seedIds_.clear();
  seedCounts_.clear();
  seedOffsets_.assign(1, 0);
  const StepExtras* x = plan.extras;
  if (x == nullptr || x->penaltySlots == nullptr) return;
  for (int s = 0; s < plan.numSeqs; ++s) {
    if (x->penaltySlots[s] < 0 || x->penaltySlotSeeds[s] == 0) continue;
    seedSlots_.push_back(x->penaltySlots[s]);
    seedIds_.insert(seedIds_.end(), x->seenTokenIds + x->seenOffsets[s], x->seenTokenIds + x->seenOffsets[s + 1]);
    seedCounts_.insert(seedCounts_.end(), x->seenCounts + x->seenOffsets[s], x->seenCounts + x->seenOffsets[s + 1]);
    seedOffsets_.push_back(static_cast<int32_t>(seedIds_.size()));
  }
}

PenaltySeeds SampledRows::seeds() const {
  return PenaltySeeds{static_cast<int>(seedSlots_.size()), seedSlots_.data(), seedOffsets_.data(), seedIds_.data(), seedCounts_.data()};
}

void SampledRows::build(const StepPlan& plan, const std::vector<int32_t>& samplePositions, int64_t vocabSize) {
  const StepExtras* x = plan.extras;
  buildSeeds(plan);
  processSlot_.clear();
  countSlot_.clear();
  slotted_ = false;
  for (auto* v : {&temperature_, &topP_, &minP_, &presence_, &frequency_, &repetition_, &biasValues_, &lpTemperature_}) v->clear();
  for (auto* v : {&topK_, &positions_, &seenIds_, &seenCounts_, &biasIds_, &lpRows_, &lpTopK_, &maskRow_}) v->clear();
  numMaskRows_ = numMaskRows(plan);
  masked_ = numMaskRows_ > 0;
  mask_ = masked_ ? x->tokenMask : nullptr;  // null while deferred: setMask gives it
  maskWords_ = static_cast<int>(maskWordsOf(vocabSize));
  seeds_.clear();
  seenOffsets_.assign(1, 0);
  biasOffsets_.assign(1, 0);
  processes_ = false;
  wantsLogprobs_ = false;
  int width = 1;
  for (int s = 0; s < plan.numSeqs; ++s) {
    const int k = x != nullptr ? x->numLogprobs[s] : -1;
    wantsLogprobs_ = wantsLogprobs_ || k >= 0;
    width = std::max(width, 1 + k);
  }
  logprobs_ = TokenLogprobs{};
  logprobs_.width = width;
  logprobs_.rowOffsets.assign(1, 0);
  for (int s = 0; s < plan.numSeqs; ++s) {
    const int row = static_cast<int>(temperature_.size());
    if (plan.sampleMask[s]) {
      temperature_.push_back(plan.temperature[s]);
      topK_.push_back(plan.topK[s]);
      topP_.push_back(plan.topP[s]);
      minP_.push_back(plan.minP != nullptr ? plan.minP[s] : 0.0f);
      seeds_.push_back(plan.seeds[s]);
      positions_.push_back(samplePositions[row]);
      const bool on = x != nullptr && processesLogits(*x, s);
      processes_ = processes_ || on;
      // A slotted sequence's seen tokens are in the backend's table (seeded above, not listed).
      const int32_t slot = x != nullptr ? penaltySlotOf(*x, s) : -1;
      slotted_ = slotted_ || slot >= 0;
      processSlot_.push_back(on ? slot : -1);
      countSlot_.push_back(slot);
      presence_.push_back(on ? x->presencePenalty[s] : 0.0f);
      frequency_.push_back(on ? x->frequencyPenalty[s] : 0.0f);
      repetition_.push_back(on ? x->repetitionPenalty[s] : 1.0f);
      if (on && slot < 0) {
        seenIds_.insert(seenIds_.end(), x->seenTokenIds + x->seenOffsets[s], x->seenTokenIds + x->seenOffsets[s + 1]);
        seenCounts_.insert(seenCounts_.end(), x->seenCounts + x->seenOffsets[s], x->seenCounts + x->seenOffsets[s + 1]);
      }
      if (on) {
        biasIds_.insert(biasIds_.end(), x->biasTokenIds + x->biasOffsets[s], x->biasTokenIds + x->biasOffsets[s + 1]);
        biasValues_.insert(biasValues_.end(), x->biasValues + x->biasOffsets[s], x->biasValues + x->biasOffsets[s + 1]);
      }
      seenOffsets_.push_back(static_cast<int32_t>(seenIds_.size()));
      biasOffsets_.push_back(static_cast<int32_t>(biasIds_.size()));
      if (masked_) maskRow_.push_back(x->maskRows[s]);
      if (x != nullptr && x->numLogprobs[s] >= 0) {
        lpRows_.push_back(row);
        lpTopK_.push_back(x->numLogprobs[s]);
        lpTemperature_.push_back(plan.temperature[s]);
      }
    }
    logprobs_.rowOffsets.push_back(static_cast<int32_t>(lpRows_.size()));
  }
  const size_t R = lpRows_.size(), W = static_cast<size_t>(width);
  logprobs_.tokenIds.assign(R * W, -1);
  logprobs_.logprobs.assign(R * W, std::numeric_limits<float>::quiet_NaN());
  logprobs_.ranks.assign(R, 0);
  request_ = LogprobRequest{};
  request_.numRows = static_cast<int>(R);
  request_.width = width;
  request_.rows = lpRows_.data();
  request_.topK = lpTopK_.data();
  request_.temperature = lpTemperature_.data();
}

LogitProcessing SampledRows::processing() const {
  LogitProcessing p{presence_.data(),    frequency_.data(),   repetition_.data(), seenOffsets_.data(), seenIds_.data(),
                    seenCounts_.data(),  biasOffsets_.data(), biasIds_.data(),    biasValues_.data()};
  if (masked_) {
    AFD_CHECK(mask_ != nullptr, "sampling: the step's token mask has not been given");
    p.maskRow = maskRow_.data();
    p.mask = mask_;
    p.numMaskRows = numMaskRows_;
    p.maskWords = maskWords_;
  }
  if (slotted_) p.penaltySlot = processSlot_.data();
  return p;
}

SamplingBatch SampledRows::batch() {
  SamplingBatch b{temperature_.data(), topK_.data(), topP_.data(), seeds_.data(), positions_.data(), minP_.data()};
  if (request_.numRows > 0) {
    b.logprobs = &request_;
    b.logprobsOut = LogprobRows{logprobs_.tokenIds.data(), logprobs_.logprobs.data(), logprobs_.ranks.data()};
  }
  if (slotted_) b.penaltySlot = countSlot_.data();
  return b;
}

}  // namespace afd
