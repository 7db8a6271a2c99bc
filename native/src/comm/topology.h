// Rank mapping of an xAyF topology, identical to shared/src/topology/mapping.ts:
// world order [F0..F(y-1), A0..A(x-1)]; the x attention ranks are cut into y contiguous
// blocks whose sizes differ by at most one, larger blocks first (3A2F: F0 <- A0,A1;
// F1 <- A2). An FFN rank's peers are its block in rank order (the peer index).
#pragma once
#include <string>

namespace afd::comm {

// The attention ranks [start, start + size) served by one FFN rank.
struct AttentionBlock {
  int ffnRank = 0;
  int start = 0;
  int size = 0;
};

struct AfdTopology {
  int numAttention = 1;  // x
  int numFfn = 1;        // y

  // x attention and y FFN ranks, validated. The counts come resolved from TypeScript
  // (shared/src/topology/spec.ts); validate() is the last guard.
  static AfdTopology of(int numAttention, int numFfn);
  // Checks the counts (x >= y >= 1); throws CommError(kConfig) naming the broken rule.
  void validate() const;
  std::string name() const;

  AttentionBlock blockOf(int ffnRank) const;
  int ffnRankOf(int attentionRank) const;
  int peerIndexOf(int attentionRank) const { return attentionRank - blockOf(ffnRankOf(attentionRank)).start; }
  // Largest block size (bounds the peers of any FFN rank).
  int maxBlockSize() const { return (numAttention + numFfn - 1) / numFfn; }
};

}  // namespace afd::comm
