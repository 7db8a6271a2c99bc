#include "model/moe-ffn.h"

#include <algorithm>

namespace afd {

MoeFfn::MoeFfn(const ModelConfig& c, const WeightStore& store, Backend& backend, bool gateOnAttention, ExpertRange experts)
    : c_(c), backend_(backend), gateOnAttention_(gateOnAttention) {
  const int64_t H = c.hiddenSize, I = c.moeIntermediateSize, E = c.numExperts;
  layers_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    if (!c.isMoeLayer(L)) continue;
    MoeLayerWeights& w = layers_[L];
    auto at = [L](const char* name) { return layerSlot(L, name); };
    if (!gateOnAttention) {
      w.routerGate = store.get(at(slot::kRouter), {E, H});
      if (c.routing.scoreCorrectionBias) w.routerBias = store.get(at(slot::kRouterBias), {E});
    }
    const FfnKind kind = c.layers[L].ffn;
    if (kind == FfnKind::MoeShared || kind == FfnKind::MoeGatedShared) {
      const int64_t S = kind == FfnKind::MoeShared ? c.routing.sharedIntermediateSize : c.gatedSharedIntermediateSize;
      w.shared.gate = store.get(at(slot::kSharedGateProj), {S, H});
      w.shared.up = store.get(at(slot::kSharedUpProj), {S, H});
      w.shared.down = store.get(at(slot::kSharedDownProj), {H, S});
    }
    if (kind == FfnKind::MoeGatedShared) w.sharedGate = store.get(at(slot::kSharedExpertGate), {1, H});
    w.experts.resize(E);
    for (int e = experts.start; e < experts.end; ++e) {
      w.experts[e].gate = store.get(expertSlot(L, slot::kExpertGateProj, e), {I, H});
      w.experts[e].up = store.get(expertSlot(L, slot::kExpertUpProj, e), {I, H});
      w.experts[e].down = store.get(expertSlot(L, slot::kExpertDownProj, e), {H, I});
    }
  }
  if (c.routing.grouped) router_ = std::make_unique<GroupedRouter>(c, backend);
}

void MoeFfn::ensureScratch(int64_t tokens) {
  if (tokens <= scratchTokens_) return;
  const int64_t E = std::max(1, c_.numExperts), K = std::max(1, c_.numExpertsPerTok);
  logits_ = Buffer(&backend_, tokens * E * sizeof(float));
  expertIds_ = Buffer(&backend_, tokens * K * sizeof(int32_t));
  expertWeights_ = Buffer(&backend_, tokens * K * sizeof(float));
  if (c_.routing.numSharedExperts > 0 || c_.gatedSharedIntermediateSize > 0)
    sharedOut_ = Buffer(&backend_, tokens * c_.hiddenSize * dtypeBytes(backend_.activationDtype()));
  if (c_.gatedSharedIntermediateSize > 0) sharedGateLogits_ = Buffer(&backend_, tokens * sizeof(float));
  scratchTokens_ = tokens;
}

void MoeFfn::forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out) {
  const MoeLayerWeights& w = layers_[layer];
  const int64_t T = hidden.dim(0), E = c_.numExperts, K = c_.numExpertsPerTok;
  ensureScratch(T);
  MoeArgs a;
  if (routerLogits != nullptr) {
    AFD_CHECK(routerLogits->ndim == 2 && routerLogits->dim(0) == T && routerLogits->dim(1) == E,
              "FFN forward: router logits have shape " << routerLogits->shapeString() << ", expected [" << T << ", " << E << "]");
    a.routerLogits = routerLogits;
  } else {
    AFD_CHECK(!gateOnAttention_, "FFN forward: layer " << layer << " needs router logits (the gate runs on attention) but none were given");
    a.routerWeight = &w.routerGate;
  }
  a.topK = static_cast<int>(K);
  a.normTopk = c_.normTopkProb;
  a.logits = logits_.view(DType::F32, {T, E});
  a.expertIds = expertIds_.view(DType::I32, {T, K});
  a.expertWeights = expertWeights_.view(DType::F32, {T, K});
  a.experts = &w.experts;
  if (router_) {
    moeGrouped(layer, hidden, a, out);
    return;
  }
  backend_.moe(hidden, a, out);
  const Tensor s = shared(layer, hidden);
  if (!s.empty()) backend_.add(out, s, out);
}

Tensor MoeFfn::shared(int layer, const Tensor& hidden) {
  if (layers_[layer].shared.gate.empty()) return Tensor{};
  Tensor s = sharedOut_.view(hidden.dtype, {hidden.dim(0), c_.hiddenSize});
  sharedExperts(layer, hidden, s);
  return s;
}

void MoeFfn::moeGrouped(int layer, const Tensor& hidden, MoeArgs& a, Tensor& out) {
  const MoeLayerWeights& w = layers_[layer];
  if (a.routerLogits == nullptr) backend_.matmul(hidden, *a.routerWeight, nullptr, a.logits);
  const Tensor& logits = a.routerLogits ? *a.routerLogits : a.logits;
  // With the gate on attention, what arrives are the dense routing weights it chose.
  if (gateOnAttention_) router_->routeDense(logits, a.expertIds, a.expertWeights);
  else router_->route(logits, w.routerBias, a.expertIds, a.expertWeights);
  // The shared experts first: their output is added in the routed experts' combine.
  const Tensor s = shared(layer, hidden);
  backend_.moeExperts(hidden, a.expertIds, a.expertWeights, w.experts, out, s.empty() ? nullptr : &s);
}

void MoeFfn::route(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& logits, Tensor& expertIds,
                   Tensor& expertWeights) {
  const MoeLayerWeights& w = layers_[layer];
  const Tensor* in = routerLogits;
  if (in == nullptr) {
    AFD_CHECK(!gateOnAttention_ && !w.routerGate.empty(),
              "FFN route: layer " << layer << " needs router logits (the gate runs on attention) but none were given");
    backend_.matmul(hidden, w.routerGate, nullptr, logits);
    in = &logits;
  }
  if (!router_) {
    backend_.routerTopK(*in, c_.numExpertsPerTok, c_.normTopkProb, expertIds, expertWeights);
  } else if (gateOnAttention_) {
    router_->routeDense(*in, expertIds, expertWeights);  // the attention half's dense routing weights
  } else {
    router_->route(*in, w.routerBias, expertIds, expertWeights);
  }
}

void MoeFfn::sharedExperts(int layer, const Tensor& hidden, Tensor& out) {
  const MoeLayerWeights& w = layers_[layer];
  AFD_CHECK(!w.shared.gate.empty(), "FFN shared experts: layer " << layer << " has none");
  backend_.siluGatedMlp(hidden, w.shared.gate, w.shared.up, w.shared.down, out);
  if (w.sharedGate.empty()) return;
  // moe+gated_shared: out *= sigmoid(x . shared_expert_gate), one scalar per token.
  ensureScratch(hidden.dim(0));
  Tensor logits = sharedGateLogits_.view(DType::F32, {hidden.dim(0), 1});
  backend_.matmul(hidden, w.sharedGate, nullptr, logits);
  backend_.sigmoidGate(out, logits, out);
}

}  // namespace afd
