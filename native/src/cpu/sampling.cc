// Token sampling. The rule every backend follows (so seeded requests reproduce):
//   temperature == 0: arg-max, lowest id on ties.
//   otherwise p = softmax(logits / temperature) in f64; the kept set is the topK most
//   likely tokens (ties: lower id first; all when topK is 0 or >= V), then within it the
//   smallest prefix by descending probability whose mass reaches topP (at least one),
//   then within that the tokens with p >= minP * pmax (pmax: the most likely token's p;
//   minP 0 keeps all). The three filters are prefixes of one probability order, each
//   measured on the whole vocabulary, so the kept set is the shortest of them.
//   u = samplingUniform(seed, position) (core/sampling-rng.h); walk the kept tokens in
//   ascending id order accumulating p and return the first whose running sum exceeds
//   u * (kept mass); the last kept token if rounding leaves none. Tokens of p 0 (a
//   logit of -inf: banned by a bias) are never returned.
// The logits are the processed ones (core/logit-ops.h: bias and penalties come first);
// the log-probability rows of params.logprobs (cpu/logprobs.cc) read the same logits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/sampling-rng.h"
#include "cpu/check.h"
#include "cpu/ops.h"

namespace afd::cpu {
namespace {

int32_t argmax(const float* l, int64_t V) {
  int64_t best = 0;
  for (int64_t i = 1; i < V; ++i)
    if (l[i] > l[best]) best = i;
  return static_cast<int32_t>(best);
}

struct Cand {
  double p;
  int32_t id;
};
// Probability order: more likely first, lower id first on ties.
inline bool moreLikely(const Cand& a, const Cand& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); }

// Orders candidates so that c[0, cut) is the smallest prefix in probability order whose
// mass reaches topP, and returns cut. O(n): a histogram over the float bit pattern of p
// (monotone in p) finds the bucket holding the cut; only that bucket is sorted.
int64_t topPCut(std::vector<Cand>& c, int64_t n, double topP) {
  constexpr int kShift = 18;  // 8 exponent + 5 mantissa bits: 8192 buckets for p in [0, 1]
  auto key = [](double p) {
    const float f = static_cast<float>(p);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits >> kShift;
  };
  const uint32_t numKeys = (0x3f800000u >> kShift) + 1;  // keys of [0, 1.0f]
  std::vector<double> mass(numKeys, 0.0);
  for (int64_t i = 0; i < n; ++i) mass[std::min(key(c[i].p), numKeys - 1)] += c[i].p;
  double above = 0;  // mass of buckets above the boundary bucket
  uint32_t boundary = 0;
  for (uint32_t k = numKeys; k-- > 0;) {
    if (above + mass[k] >= topP) {
      boundary = k;
      break;
    }
    above += mass[k];
  }
  // Partition: higher buckets first, then the boundary bucket (sorted), then the rest.
  auto mid = std::partition(c.begin(), c.begin() + n, [&](const Cand& x) { return std::min(key(x.p), numKeys - 1) > boundary; });
  auto end = std::partition(mid, c.begin() + n, [&](const Cand& x) { return std::min(key(x.p), numKeys - 1) == boundary; });
  std::sort(mid, end, moreLikely);
  double run = above;
  for (auto it = mid; it != end; ++it) {
    run += it->p;
    if (run >= topP) return (it - c.begin()) + 1;
  }
  return n;  // rounding left the total just under topP: keep everything
}

// Per-thread scratch reused across the rows of one chunk (no per-row page faults).
struct Scratch {
  std::vector<Cand> c;
  std::vector<double> keptP;
};

int32_t sampleRow(const float* l, int64_t V, float temperature, int32_t topK, float topP, float minP, uint32_t seed,
                  int32_t pos, Scratch& scratch) {
  if (!(temperature > 0)) return argmax(l, V);
  const float mx = *std::max_element(l, l + V);
  std::vector<Cand>& c = scratch.c;
  c.resize(V);
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) {
    c[i] = {std::exp((static_cast<double>(l[i]) - mx) / temperature), static_cast<int32_t>(i)};
    sum += c[i].p;
  }
  for (auto& x : c) x.p /= sum;
  int64_t n = V;
  const bool filtered = (topK > 0 && topK < V) || topP < 1.0f || minP > 0.0f;
  if (topK > 0 && topK < V) {
    std::nth_element(c.begin(), c.begin() + topK, c.end(), moreLikely);
    n = topK;
  }
  if (topP < 1.0f) n = std::max<int64_t>(1, topPCut(c, n, topP));
  if (minP > 0.0f) {
    // pmax = exp(0) / sum: the arg-max always stays, so n stays >= 1.
    const double pFloor = static_cast<double>(minP) / sum;
    n = std::partition(c.begin(), c.begin() + n, [&](const Cand& x) { return x.p >= pFloor; }) - c.begin();
  }
  if (!filtered) {  // c is still in id order
    double mass = 0;
    for (int64_t i = 0; i < V; ++i) mass += c[i].p;
    const double target = static_cast<double>(samplingUniform(seed, pos)) * mass;
    double run = 0;
    int32_t last = 0;
    for (int64_t i = 0; i < V; ++i) {
      if (!(c[i].p > 0)) continue;  // a banned token (bias -inf) is never drawn, not even by rounding
      run += c[i].p;
      last = c[i].id;
      if (run > target) return last;
    }
    return last;
  }
  // Walk the kept tokens in id order (a mask instead of sorting them by id).
  std::vector<double>& keptP = scratch.keptP;
  keptP.assign(V, -1.0);
  double mass = 0;
  for (int64_t i = 0; i < n; ++i) {
    keptP[c[i].id] = c[i].p;
    mass += c[i].p;
  }
  const double target = static_cast<double>(samplingUniform(seed, pos)) * mass;
  double run = 0;
  int32_t last = 0;
  for (int64_t id = 0; id < V; ++id) {
    if (!(keptP[id] > 0)) continue;  // not kept, or banned (p 0)
    run += keptP[id];
    last = static_cast<int32_t>(id);
    if (run > target) return last;
  }
  return last;
}

}  // namespace

// logits: [S, V] f32; outTokens: host [S].
void sample(ThreadPool& pool, const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) {
  const int64_t S = logits.dim(0), V = logits.dim(1);
  contract::checkShape("sample", "logits", logits, {-1, -1});
  // One chunk per thread, so each thread allocates its scratch once.
  pool.parallelFor(S, (S + pool.size() - 1) / pool.size(), [&](int64_t b, int64_t e) {
    Scratch scratch;
    for (int64_t s = b; s < e; ++s)
      outTokens[s] = sampleRow(logits.ptr<float>() + s * V, V, params.temperature[s], params.topK[s], params.topP[s],
                               params.minP != nullptr ? params.minP[s] : 0.0f, params.seeds[s], params.positions[s], scratch);
  });
  if (params.logprobs == nullptr || params.logprobs->numRows == 0) return;
  // The chosen token of each log-probability row is its logits row's sampled token.
  LogprobRequest req = *params.logprobs;
  std::vector<int32_t> targets(req.numRows);
  for (int j = 0; j < req.numRows; ++j) {
    const int64_t row = req.rows != nullptr ? req.rows[j] : j;
    AFD_CHECK(row >= 0 && row < S, "sample: log-probability row " << j << " reads logits row " << row << " of " << S);
    targets[j] = outTokens[row];
  }
  req.targets = targets.data();
  logprobs(pool, logits, req, params.logprobsOut);
}

}  // namespace afd::cpu
