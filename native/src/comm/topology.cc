#include "comm/topology.h"

#include <string>

#include "comm/comm-error.h"

namespace afd::comm {

AfdTopology AfdTopology::of(int numAttention, int numFfn) {
  AfdTopology t;
  t.numAttention = numAttention;
  t.numFfn = numFfn;
  t.validate();
  return t;
}

void AfdTopology::validate() const {
  if (numAttention < 1 || numFfn < 1) {
    throw CommError(CommErrorKind::kConfig, "topology " + name() + ": rank counts must be positive");
  }
  if (numAttention < numFfn) {
    throw CommError(CommErrorKind::kConfig,
                    "topology " + name() + ": there must be at least as many attention ranks as FFN ranks (x >= y), " +
                        "so every FFN rank serves at least one attention rank");
  }
}

std::string AfdTopology::name() const { return std::to_string(numAttention) + "A" + std::to_string(numFfn) + "F"; }

AttentionBlock AfdTopology::blockOf(int ffnRank) const {
  if (ffnRank < 0 || ffnRank >= numFfn) {
    throw CommError(CommErrorKind::kConfig, "ffn rank " + std::to_string(ffnRank) + " does not exist in " + name() +
                                                " (valid: 0.." + std::to_string(numFfn - 1) + ")");
  }
  int base = numAttention / numFfn;
  int extra = numAttention % numFfn;
  AttentionBlock b;
  b.ffnRank = ffnRank;
  b.start = ffnRank * base + (ffnRank < extra ? ffnRank : extra);
  b.size = base + (ffnRank < extra ? 1 : 0);
  return b;
}

int AfdTopology::ffnRankOf(int attentionRank) const {
  if (attentionRank < 0 || attentionRank >= numAttention) {
    throw CommError(CommErrorKind::kConfig, "attention rank " + std::to_string(attentionRank) + " does not exist in " +
                                                name() + " (valid: 0.." + std::to_string(numAttention - 1) + ")");
  }
  int base = numAttention / numFfn;
  int extra = numAttention % numFfn;
  int bigSpan = extra * (base + 1);
  return attentionRank < bigSpan ? attentionRank / (base + 1) : extra + (attentionRank - bigSpan) / base;
}

}  // namespace afd::comm
