// The CPU backend's penalty table (core/logit-ops.h, PenaltySeeds): per slot a row of V
// int32 entries in host memory, grown to the largest slot seeded.
#pragma once
#include <cstdint>
#include <vector>

#include "core/logit-ops.h"

namespace afd::cpu {

class PenaltyTable {
 public:
  // Clears the seeded slots' rows and writes their lists (count c -> entry 1 + c).
  void seed(const PenaltySeeds& seeds, int64_t vocab);
  // Row of slot k (throws when k was never seeded or the vocabulary differs).
  const int32_t* row(int32_t k, int64_t vocab) const;
  // Counts the sampled token of each row with a slot (slots[r] >= 0).
  void countSampled(const int32_t* slots, const int32_t* tokens, int64_t rows);

 private:
  int32_t* row(int32_t k);

  std::vector<int32_t> entries_;  // [rows_ * vocab_]
  int64_t vocab_ = 0;
  int32_t rows_ = 0;
};

}  // namespace afd::cpu
