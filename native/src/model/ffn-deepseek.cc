// The DeepSeek parts of the FFN half: grouped routing and the shared experts.
#include "model/model.h"

namespace afd {

void FfnModel::moeGrouped(const FfnLayer& f, const Tensor& hidden, MoeArgs& a, Tensor& out) {
  if (a.routerLogits == nullptr) backend_.matmul(hidden, *a.routerWeight, nullptr, a.logits);
  const Tensor& logits = a.routerLogits ? *a.routerLogits : a.logits;
  // With the gate on attention, what arrives are the dense routing weights it chose.
  if (gateOnAttention_) router_->routeDense(logits, a.expertIds, a.expertWeights);
  else router_->route(logits, f.routerBias, a.expertIds, a.expertWeights);
  // The shared experts first: their output is added in the routed experts' combine.
  Tensor shared;
  if (!f.shared.gate.empty()) {
    shared = sharedOut_.view(hidden.dtype, {hidden.dim(0), config_.hiddenSize});
    backend_.siluGatedMlp(hidden, f.shared.gate, f.shared.up, f.shared.down, shared);
  }
  backend_.moeExperts(hidden, a.expertIds, a.expertWeights, f.experts, out, f.shared.gate.empty() ? nullptr : &shared);
}

}  // namespace afd
