#include "comm/topology.h"

#include <cctype>
#include <string>

#include "comm/comm-error.h"

namespace afd::comm {

namespace {

// Parses a run of digits at s[i..]; returns -1 when there is none or it is too large.
int parseCount(const std::string& s, size_t& i) {
  size_t start = i;
  long value = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    value = value * 10 + (s[i] - '0');
    if (value > 1 << 20) return -1;
    ++i;
  }
  return i == start ? -1 : static_cast<int>(value);
}

}  // namespace

AfdTopology AfdTopology::parse(const std::string& name) {
  size_t i = 0;
  AfdTopology t;
  t.numAttention = parseCount(name, i);
  bool ok = t.numAttention > 0 && i < name.size() && std::tolower(static_cast<unsigned char>(name[i])) == 'a';
  if (ok) {
    ++i;
    t.numFfn = parseCount(name, i);
    ok = t.numFfn > 0 && i + 1 == name.size() && std::tolower(static_cast<unsigned char>(name[i])) == 'f';
  }
  if (!ok) {
    throw CommError(CommErrorKind::kConfig, "topology \"" + name +
                                                "\" is not xAyF with positive integers x and y (e.g. 2A2F, 3A2F)");
  }
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
