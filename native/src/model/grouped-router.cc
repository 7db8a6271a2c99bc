#include "model/grouped-router.h"

#include <algorithm>

namespace afd {

GroupedRouter::GroupedRouter(const ModelConfig& c, Backend& backend) : backend_(backend), params_(moeRoutingParams(c)) {}

void GroupedRouter::route(const Tensor& logits, const Tensor& bias, Tensor& ids, Tensor& weights) {
  backend_.moeGroupedRoute(logits, bias.empty() ? nullptr : &bias, params_, ids, weights);
}

void GroupedRouter::routeDense(const Tensor& dense, Tensor& ids, Tensor& weights) {
  // The chosen experts are exactly the positive entries: the k largest, weights as they are.
  MoeRoutingParams pick;
  pick.k = params_.k;
  pick.scoring = RouterScoring::None;
  pick.method = RouterTopkMethod::Greedy;
  backend_.moeGroupedRoute(dense, nullptr, pick, ids, weights);
}

void GroupedRouter::toDense(Tensor& logits, const Tensor& bias) {
  const int64_t T = logits.dim(0), K = params_.k;
  if (T > tokens_) {
    tokens_ = std::max<int64_t>(T, tokens_ * 2);
    ids_ = Buffer(&backend_, tokens_ * K * sizeof(int32_t));
    weights_ = Buffer(&backend_, tokens_ * K * sizeof(float));
  }
  Tensor ids = ids_.view(DType::I32, {T, K}), weights = weights_.view(DType::F32, {T, K});
  route(logits, bias, ids, weights);
  backend_.scatterRouting(ids, weights, logits);
}

}  // namespace afd
