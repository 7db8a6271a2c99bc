#include "cpu/penalty-table.h"

#include <algorithm>

#include "core/error.h"

namespace afd::cpu {

void PenaltyTable::seed(const PenaltySeeds& seeds, int64_t vocab) {
  if (seeds.numSlots == 0) return;
  AFD_CHECK(vocab > 0, "penalty table: vocabulary of " << vocab << " tokens");
  if (vocab != vocab_) {  // a new engine's vocabulary (one per backend in practice): start over
    entries_.clear();
    rows_ = 0;
    vocab_ = vocab;
  }
  int32_t top = rows_;
  for (int i = 0; i < seeds.numSlots; ++i) {
    const int32_t k = seeds.slots[i];
    AFD_CHECK(k >= 0 && k < kMaxPenaltySlots, "penalty table: slot " << k << " outside [0, " << kMaxPenaltySlots << ")");
    top = std::max(top, k + 1);
  }
  if (top > rows_) {
    entries_.resize(static_cast<size_t>(top) * static_cast<size_t>(vocab_), 0);
    rows_ = top;
  }
  for (int i = 0; i < seeds.numSlots; ++i) {
    int32_t* entries = row(seeds.slots[i]);
    std::fill(entries, entries + vocab_, 0);
    for (int32_t e = seeds.offsets[i]; e < seeds.offsets[i + 1]; ++e) {
      AFD_CHECK(seeds.ids[e] >= 0 && seeds.ids[e] < vocab_, "penalty table: seen token " << seeds.ids[e] << " outside the vocabulary");
      entries[seeds.ids[e]] = 1 + seeds.counts[e];
    }
  }
}

const int32_t* PenaltyTable::row(int32_t k, int64_t vocab) const {
  AFD_CHECK(vocab == vocab_ && k >= 0 && k < rows_, "penalty table: slot " << k << " was never seeded (" << rows_
                                                                              << " slots); seed a slot before a step reads it");
  return entries_.data() + static_cast<size_t>(k) * static_cast<size_t>(vocab_);
}

int32_t* PenaltyTable::row(int32_t k) { return const_cast<int32_t*>(static_cast<const PenaltyTable&>(*this).row(k, vocab_)); }

void PenaltyTable::countSampled(const int32_t* slots, const int32_t* tokens, int64_t rows) {
  for (int64_t r = 0; slots != nullptr && r < rows; ++r) {
    if (slots[r] < 0) continue;
    int32_t& e = row(slots[r])[tokens[r]];
    e = penaltyEntryAfterSample(e);
  }
}

}  // namespace afd::cpu
