// Expert parallelism's view of the FFN half (ep/ffn-group.h): a layer's routing
// (its router or what the attention half sent; plain or DeepSeek's grouped top-k) and its
// shared experts, so the FFN group's exchange carries only the routed experts.
#include "model/grouped-router.h"
#include "model/model.h"

namespace afd {

void FfnModel::route(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& logits, Tensor& expertIds,
                     Tensor& expertWeights) {
  AFD_CHECK(layer >= 0 && layer < numLayers() && layers_[layer].moe, "FFN route: layer " << layer << " is not an MoE layer");
  const FfnLayer& f = layers_[layer];
  const Tensor* in = routerLogits;
  if (in == nullptr) {
    AFD_CHECK(!gateOnAttention_ && !f.routerGate.empty(),
              "FFN route: layer " << layer << " needs router logits (the gate runs on attention) but none were given");
    backend_.matmul(hidden, f.routerGate, nullptr, logits);
    in = &logits;
  }
  if (!router_) {
    backend_.routerTopK(*in, config_.numExpertsPerTok, config_.normTopkProb, expertIds, expertWeights);
  } else if (gateOnAttention_) {
    router_->routeDense(*in, expertIds, expertWeights);  // the attention half's dense routing weights
  } else {
    router_->route(*in, f.routerBias, expertIds, expertWeights);
  }
}

void FfnModel::sharedExperts(int layer, const Tensor& hidden, Tensor& out) {
  const ExpertWeights& s = layers_[layer].shared;
  AFD_CHECK(!s.gate.empty(), "FFN shared experts: layer " << layer << " has none");
  backend_.siluGatedMlp(hidden, s.gate, s.up, s.down, out);
}

}  // namespace afd
