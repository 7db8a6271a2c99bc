// DeepSeek's grouped top-k router (softmax / sigmoid scores, greedy, group-limited
// greedy or noaux_tc with the score correction bias) and the dense routing weights the
// attention role sends when the gate runs there.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/deepseek-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace afd::cpu {
namespace {

// Indices [0, n) of the `keep` highest values (ties: lower index first), in that order.
void topIndices(const std::vector<double>& v, int64_t keep, std::vector<int32_t>& order) {
  order.resize(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  order.resize(static_cast<size_t>(keep));
}

}  // namespace

// logits: [T, E] f32; scoreBias: [E] or null; expertIds: [T, k] i32; expertWeights: [T, k] f32.
void moeGroupedRoute(ThreadPool& pool, const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p,
                     Tensor& expertIds, Tensor& expertWeights) {
  contract::checkMoeGroupedRoute(logits, scoreBias, p, expertIds, expertWeights);
  const int64_t T = logits.dim(0), E = logits.dim(1), G = p.numGroups, perGroup = E / std::max(1, p.numGroups);
  std::vector<float> bias(scoreBias ? static_cast<size_t>(E) : 0);
  if (scoreBias) convertElems(scoreBias->data, scoreBias->dtype, 0, E, bias.data());
  pool.parallelFor(T, 16, [&](int64_t b, int64_t e) {
    std::vector<double> s(E), choice(E), group(p.method == RouterTopkMethod::Greedy ? 0 : G);
    std::vector<int32_t> order, groups;
    for (int64_t t = b; t < e; ++t) {
      const float* l = logits.ptr<float>() + t * E;
      if (p.scoring == RouterScoring::Softmax) {
        const float mx = *std::max_element(l, l + E);
        double sum = 0;
        for (int64_t i = 0; i < E; ++i) sum += (s[i] = std::exp(static_cast<double>(l[i]) - mx));
        for (int64_t i = 0; i < E; ++i) s[i] /= sum;
      } else {
        const bool sigmoid = p.scoring == RouterScoring::Sigmoid;
        for (int64_t i = 0; i < E; ++i) s[i] = sigmoid ? 1.0 / (1.0 + std::exp(-static_cast<double>(l[i]))) : l[i];
      }
      for (int64_t i = 0; i < E; ++i) choice[i] = s[i] + (bias.empty() ? 0.0 : bias[i]);
      if (p.method != RouterTopkMethod::Greedy) {
        for (int64_t g = 0; g < G; ++g) {
          const double* c = &choice[g * perGroup];
          if (p.method == RouterTopkMethod::GroupLimitedGreedy) {
            group[g] = *std::max_element(&s[g * perGroup], &s[g * perGroup] + perGroup);
          } else {  // noaux_tc: the sum of the group's two best choices
            double best = -INFINITY, second = -INFINITY;
            for (int64_t i = 0; i < perGroup; ++i) {
              if (c[i] > best) {
                second = best;
                best = c[i];
              } else if (c[i] > second) {
                second = c[i];
              }
            }
            group[g] = best + second;
          }
        }
        topIndices(group, p.topkGroups, groups);
        std::vector<bool> groupKept(G, false);
        for (int32_t g : groups) groupKept[g] = true;
        for (int64_t i = 0; i < E; ++i)
          if (!groupKept[i / perGroup]) choice[i] = -INFINITY;
      }
      topIndices(choice, p.k, order);
      double chosen = 0;
      for (int32_t id : order) chosen += s[id];
      for (int j = 0; j < p.k; ++j) {
        const double w = p.normTopk ? s[order[j]] / (chosen + 1e-20) : s[order[j]];
        expertIds.ptr<int32_t>()[t * p.k + j] = order[j];
        expertWeights.ptr<float>()[t * p.k + j] = static_cast<float>(w * p.scale);
      }
    }
  });
}

// expertIds, expertWeights: [T, K]; dense: [T, E] f32.
void scatterRouting(ThreadPool& pool, const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense) {
  contract::checkScatterRouting(expertIds, expertWeights, dense);
  const int64_t T = expertIds.dim(0), K = expertIds.dim(1), E = dense.dim(1);
  pool.parallelFor(T, 64, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* row = dense.ptr<float>() + t * E;
      std::fill(row, row + E, 0.0f);
      for (int64_t j = 0; j < K; ++j) {
        const int32_t id = expertIds.ptr<int32_t>()[t * K + j];
        AFD_CHECK(id >= 0 && id < E, "scatterRouting: expert id " << id << " of token " << t << " is outside [0, " << E << ")");
        row[id] = expertWeights.ptr<float>()[t * K + j];
      }
    }
  });
}

}  // namespace afd::cpu
