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
    if (c.layers[L].ffn == FfnKind::MoeShared) {
      const int64_t S = c.routing.sharedIntermediateSize;
      w.shared.gate = store.get(at(slot::kSharedGateProj), {S, H});
      w.shared.up = store.get(at(slot::kSharedUpProj), {S, H});
      w.shared.down = store.get(at(slot::kSharedDownProj), {H, S});
    }
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
  if (c_.routing.numSharedExperts > 0)
    sharedOut_ = Buffer(&backend_, tokens * c_.hiddenSize * dtypeBytes(backend_.activationDtype()));
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
  if (router_) moeGrouped(w, hidden, a, out);
  else backend_.moe(hidden, a, out);
}

void MoeFfn::moeGrouped(const MoeLayerWeights& w, const Tensor& hidden, MoeArgs& a, Tensor& out) {
  if (a.routerLogits == nullptr) backend_.matmul(hidden, *a.routerWeight, nullptr, a.logits);
  const Tensor& logits = a.routerLogits ? *a.routerLogits : a.logits;
  // With the gate on attention, what arrives are the dense routing weights it chose.
  if (gateOnAttention_) router_->routeDense(logits, a.expertIds, a.expertWeights);
  else router_->route(logits, w.routerBias, a.expertIds, a.expertWeights);
  // The shared experts first: their output is added in the routed experts' combine.
  Tensor shared;
  if (!w.shared.gate.empty()) {
    shared = sharedOut_.view(hidden.dtype, {hidden.dim(0), c_.hiddenSize});
    backend_.siluGatedMlp(hidden, w.shared.gate, w.shared.up, w.shared.down, shared);
  }
  backend_.moeExperts(hidden, a.expertIds, a.expertWeights, w.experts, out, w.shared.gate.empty() ? nullptr : &shared);
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
  const ExpertWeights& s = layers_[layer].shared;
  AFD_CHECK(!s.gate.empty(), "FFN shared experts: layer " << layer << " has none");
  backend_.siluGatedMlp(hidden, s.gate, s.up, s.down, out);
}

}  // namespace afd
