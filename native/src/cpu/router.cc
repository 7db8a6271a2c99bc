// MoE router: softmax over experts, top-k, optional renormalisation (norm_topk_prob).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/ops.h"

namespace afd::cpu {

// logits: [T, E] f32; expertIds: [T, K] i32; expertWeights: [T, K] f32.
void routerTopK(ThreadPool& pool, const Tensor& logits, int k, bool normTopk, Tensor& expertIds,
                Tensor& expertWeights) {
  const int64_t T = logits.dim(0), E = logits.dim(1);
  contract::checkRouterTopK(logits, k, expertIds, expertWeights);
  pool.parallelFor(T, 16, [&](int64_t b, int64_t e) {
    std::vector<double> p(E);
    std::vector<int32_t> order(E);
    for (int64_t t = b; t < e; ++t) {
      const float* l = logits.ptr<float>() + t * E;
      const float mx = *std::max_element(l, l + E);
      double sum = 0;
      for (int64_t i = 0; i < E; ++i) sum += (p[i] = std::exp(static_cast<double>(l[i]) - mx));
      for (int64_t i = 0; i < E; ++i) p[i] /= sum;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int32_t a, int32_t c) { return p[a] > p[c] || (p[a] == p[c] && a < c); });
      double kept = 0;
      for (int j = 0; j < k; ++j) kept += p[order[j]];
      for (int j = 0; j < k; ++j) {
        expertIds.ptr<int32_t>()[t * k + j] = order[j];
        expertWeights.ptr<float>()[t * k + j] = static_cast<float>(normTopk ? p[order[j]] / kept : p[order[j]]);
      }
    }
  });
}

}  // namespace afd::cpu
