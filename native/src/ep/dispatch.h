// The host-side bookkeeping of one expert-parallel MoE layer on one FFN rank: which
// token-expert pairs go to which owner (dispatch), and in which order a token's expert
// outputs are summed when they come back (combine). Pure data, no backend: unit-tested by
// testing/programs/ep/ep-dispatch-test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "model/expert-placement.h"

namespace afd {

struct EpDispatchPlan {
  int numRanks = 0;
  int64_t rows = 0;  // routed (real) rows R
  int topK = 0;      // K
  // Pairs sent to each owner rank, in (row, slot) order: [numRanks] lists of pair indices r * K + j.
  std::vector<std::vector<int32_t>> pairsOf;
  // For pair r * K + j: its owner, and its index in that owner's list.
  std::vector<int32_t> ownerOf, indexAtOwner;
  // For each row, its K pair indices sorted by expert id (the colocated sum order).
  std::vector<int32_t> combineOrder;  // [R * K]
};

// ids: [rows, topK] expert ids (host, from the router's top-k).
EpDispatchPlan planDispatch(const int32_t* ids, int64_t rows, int topK, int numExperts, int numRanks);

}  // namespace afd
