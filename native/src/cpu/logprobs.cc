// Log-probability rows (core/logit-ops.h, LogprobRequest): log-softmax in f64 of one
// logits row / temperature, the chosen token's value and rank, and the row's top k.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/check.h"
#include "cpu/ops.h"

namespace afd::cpu {
namespace {

struct Top {
  float logit;
  int32_t id;
};

// The k largest logits of l[0, V) in value order, lower id first on ties: ids ascend,
// so an equal value never displaces an earlier one. top: room for k entries; returns k.
int topLogits(const float* l, int64_t V, int k, Top* top) {
  int n = 0;
  for (int64_t i = 0; i < V && k > 0; ++i) {
    const float x = l[i];
    if (n == k && !(x > top[n - 1].logit)) continue;
    int at = n < k ? n++ : k - 1;
    while (at > 0 && x > top[at - 1].logit) {
      top[at] = top[at - 1];
      --at;
    }
    top[at] = Top{x, static_cast<int32_t>(i)};
  }
  return n;
}

}  // namespace

void logprobRow(const float* l, int64_t V, float temperature, int32_t target, int k, int width, int32_t* ids, float* values,
                int32_t* rank) {
  const double t = temperature > 0 ? static_cast<double>(temperature) : 1.0;
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < V; ++i) mx = l[i] > mx ? l[i] : mx;
  double sum = 0;
  int32_t above = 0;
  const float chosen = l[target];
  for (int64_t i = 0; i < V; ++i) {
    sum += std::exp((static_cast<double>(l[i]) - mx) / t);
    above += l[i] > chosen ? 1 : 0;
  }
  const double logSum = std::log(sum);
  auto logprob = [&](float x) { return static_cast<float>((static_cast<double>(x) - mx) / t - logSum); };
  Top top[kMaxTopLogprobs];
  const int n = topLogits(l, V, k, top);
  ids[0] = target;
  values[0] = logprob(chosen);
  for (int j = 1; j < width; ++j) {
    ids[j] = j <= n ? top[j - 1].id : -1;
    values[j] = j <= n ? logprob(top[j - 1].logit) : std::numeric_limits<float>::quiet_NaN();
  }
  *rank = 1 + above;
}

// logits: [S, V] f32; req.targets required.
void logprobs(ThreadPool& pool, const Tensor& logits, const LogprobRequest& req, const LogprobRows& out) {
  contract::checkShape("logprobs", "logits", logits, {-1, -1});
  contract::checkDType("logprobs", "logits", logits, DType::F32);
  AFD_CHECK(req.targets != nullptr, "logprobs: the request has no chosen tokens (targets)");
  const int64_t V = logits.dim(1);
  for (int j = 0; j < req.numRows; ++j) {
    const int64_t row = req.rows != nullptr ? req.rows[j] : j;
    AFD_CHECK(row >= 0 && row < logits.dim(0), "logprobs: output row " << j << " reads logits row " << row << " of " << logits.dim(0));
    AFD_CHECK(req.topK[j] >= 0 && req.topK[j] < req.width && req.topK[j] <= kMaxTopLogprobs,
              "logprobs: row " << j << " asks " << req.topK[j] << " top tokens; expected 0.." << std::min(req.width - 1, kMaxTopLogprobs));
    AFD_CHECK(req.targets[j] >= 0 && req.targets[j] < V, "logprobs: row " << j << " chooses token " << req.targets[j] << ", outside [0, " << V << ")");
  }
  pool.parallelFor(req.numRows, 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t row = req.rows != nullptr ? req.rows[j] : j;
      logprobRow(logits.ptr<float>() + row * V, V, req.temperature != nullptr ? req.temperature[j] : 1.0f, req.targets[j],
                 req.topK[j], req.width, out.tokenIds + j * req.width, out.logprobs + j * req.width, out.ranks + j);
    }
  });
}

}  // namespace afd::cpu
