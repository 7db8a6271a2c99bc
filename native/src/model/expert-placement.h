// Static expert parallelism inside the FFN group: routed expert e of every MoE layer lives
// on FFN rank floor(e * F / E). Each rank owns one contiguous range of experts and the
// range sizes differ by at most one (E = 8, F = 3: [0, 3) [3, 6) [6, 8)). The same rule is
// in shared/src/topology/expertPlacement.ts; both must change together.
#pragma once
#include <cstdint>

namespace afd {

// The routed experts [start, end) one rank holds (the same range in every MoE layer).
struct ExpertRange {
  int start = 0;
  int end = 0;  // exclusive
  bool contains(int e) const { return e >= start && e < end; }
  int size() const { return end - start; }
};

// FFN rank that holds expert e of E experts spread over F ranks.
inline int expertOwner(int e, int numExperts, int numRanks) {
  return static_cast<int>(static_cast<int64_t>(e) * numRanks / numExperts);
}

// The experts FFN rank f holds: every e with floor(e * F / E) == f, i.e.
// [ceil(f * E / F), ceil((f + 1) * E / F)). Empty when F > E leaves the rank none.
inline ExpertRange expertRangeOf(int rank, int numExperts, int numRanks) {
  auto ceilDiv = [](int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); };
  return ExpertRange{ceilDiv(static_cast<int64_t>(rank) * numExperts, numRanks),
                     ceilDiv(static_cast<int64_t>(rank + 1) * numExperts, numRanks)};
}

}  // namespace afd
