// Token sampling. The rule every backend follows (so seeded requests reproduce):
//   temperature == 0: arg-max, lowest id on ties.
//   otherwise p = softmax(logits / temperature) in f64; the kept set is the topK most
//   likely tokens (ties: lower id first; all when topK is 0 or >= V), then within it the
//   smallest prefix by descending probability whose mass reaches topP (at least one);
//   u = samplingUniform(seed, position) (core/sampling-rng.h); walk the kept tokens in
//   ascending id order accumulating p and return the first whose running sum exceeds
//   u * (kept mass); the last kept token if rounding leaves none.
#include <algorithm>
#include <cmath>
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

// Length of the smallest prefix of c[0, n) in probability order whose mass reaches topP,
// found by weighted quickselect in O(n) (no full sort of the vocabulary).
int64_t topPCut(std::vector<Cand>& c, int64_t n, double topP) {
  int64_t lo = 0, hi = n;
  double before = 0;  // mass of everything ranked above c[lo]
  while (hi - lo > 64) {
    const int64_t mid = lo + (hi - lo) / 2;
    std::nth_element(c.begin() + lo, c.begin() + mid, c.begin() + hi, moreLikely);
    double left = 0;
    for (int64_t i = lo; i < mid; ++i) left += c[i].p;
    if (before + left >= topP) {
      hi = mid;
    } else if (before + left + c[mid].p >= topP) {
      return mid + 1;
    } else {
      before += left + c[mid].p;
      lo = mid + 1;
    }
  }
  std::sort(c.begin() + lo, c.begin() + hi, moreLikely);
  for (int64_t i = lo; i < hi; ++i) {
    before += c[i].p;
    if (before >= topP) return i + 1;
  }
  return n;  // rounding left the total just under topP: keep everything
}

int32_t sampleRow(const float* l, int64_t V, float temperature, int32_t topK, float topP, uint32_t seed, int32_t pos) {
  if (!(temperature > 0)) return argmax(l, V);
  const float mx = *std::max_element(l, l + V);
  std::vector<Cand> c(V);
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) {
    c[i] = {std::exp((static_cast<double>(l[i]) - mx) / temperature), static_cast<int32_t>(i)};
    sum += c[i].p;
  }
  for (auto& x : c) x.p /= sum;
  int64_t n = V;
  const bool filtered = (topK > 0 && topK < V) || topP < 1.0f;
  if (topK > 0 && topK < V) {
    std::nth_element(c.begin(), c.begin() + topK, c.end(), moreLikely);
    n = topK;
  }
  if (topP < 1.0f) n = std::max<int64_t>(1, topPCut(c, n, topP));
  if (!filtered) {  // c is still in id order
    double mass = 0;
    for (int64_t i = 0; i < V; ++i) mass += c[i].p;
    const double target = static_cast<double>(samplingUniform(seed, pos)) * mass;
    double run = 0;
    for (int64_t i = 0; i < V; ++i) {
      run += c[i].p;
      if (run > target) return c[i].id;
    }
    return c[V - 1].id;
  }
  // Walk the kept tokens in id order (a mask instead of sorting them by id).
  std::vector<double> keptP(V, -1.0);
  double mass = 0;
  for (int64_t i = 0; i < n; ++i) {
    keptP[c[i].id] = c[i].p;
    mass += c[i].p;
  }
  const double target = static_cast<double>(samplingUniform(seed, pos)) * mass;
  double run = 0;
  int32_t last = 0;
  for (int64_t id = 0; id < V; ++id) {
    if (keptP[id] < 0) continue;
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
  checkShape("sample", "logits", logits, {-1, -1});
  pool.parallelFor(S, 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s)
      outTokens[s] = sampleRow(logits.ptr<float>() + s * V, V, params.temperature[s], params.topK[s], params.topP[s],
                               params.seeds[s], params.positions[s]);
  });
}

}  // namespace afd::cpu
