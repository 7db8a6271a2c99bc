// DeepSeek's grouped routing for either half (Backend::moeGroupedRoute). With the gate on the
// attention role the attention half routes too (the score correction bias lives with
// the gate) and sends dense routing weights [T, E] in place of router logits; the FFN
// half then only picks the chosen experts out of them.
#pragma once
#include "core/backend.h"
#include "model/model-config.h"

namespace afd {

class GroupedRouter {
 public:
  GroupedRouter(const ModelConfig& c, Backend& backend);

  // FFN half: each token's experts and weights from its router logits [T, E]
  // (bias: the layer's ffn.router_bias slot [E], or empty).
  void route(const Tensor& logits, const Tensor& bias, Tensor& expertIds, Tensor& expertWeights);
  // FFN half: the same from the dense routing weights the attention half computed.
  void routeDense(const Tensor& dense, Tensor& expertIds, Tensor& expertWeights);
  // Attention half (gate on attention): router logits [T, E] -> dense routing weights, in place.
  void toDense(Tensor& logits, const Tensor& bias);

 private:
  Backend& backend_;
  MoeRoutingParams params_;
  int64_t tokens_ = 0;
  Buffer ids_, weights_;  // toDense's scratch
};

}  // namespace afd
