#include "ep/dispatch.h"

#include <algorithm>

#include "core/error.h"

namespace afd {

EpDispatchPlan planDispatch(const int32_t* ids, int64_t rows, int topK, int numExperts, int numRanks) {
  AFD_CHECK(numRanks >= 1 && numExperts >= 1 && topK >= 1, "planDispatch: " << numRanks << " ranks, " << numExperts
                                                                             << " experts, top-" << topK);
  EpDispatchPlan p;
  p.numRanks = numRanks;
  p.rows = rows;
  p.topK = topK;
  p.pairsOf.assign(numRanks, {});
  const int64_t pairs = rows * topK;
  p.ownerOf.resize(pairs);
  p.indexAtOwner.resize(pairs);
  p.combineOrder.resize(pairs);
  for (int64_t i = 0; i < pairs; ++i) {
    const int32_t e = ids[i];
    AFD_CHECK(e >= 0 && e < numExperts, "router picked expert " << e << " for token " << i / topK << ", outside [0, "
                                                                << numExperts << ")");
    const int owner = expertOwner(e, numExperts, numRanks);
    p.ownerOf[i] = owner;
    p.indexAtOwner[i] = static_cast<int32_t>(p.pairsOf[owner].size());
    p.pairsOf[owner].push_back(static_cast<int32_t>(i));
  }
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* order = p.combineOrder.data() + r * topK;
    for (int j = 0; j < topK; ++j) order[j] = static_cast<int32_t>(r * topK + j);
    // The colocated MoE sums a token's experts in expert-id order; so does the combine.
    std::sort(order, order + topK, [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
  }
  return p;
}

}  // namespace afd
