// The FFN half of one decoder layer: dense MLP or router + top-k + experts.
#include "model/layer-split.h"
#include "model/model.h"

namespace afd {

void FfnModel::ensureScratch(int64_t tokens) {
  if (tokens <= scratchTokens_) return;
  const int64_t E = std::max(1, config_.numExperts), K = std::max(1, config_.numExpertsPerTok);
  logits_ = Buffer(&backend_, tokens * E * sizeof(float));
  expertIds_ = Buffer(&backend_, tokens * K * sizeof(int32_t));
  expertWeights_ = Buffer(&backend_, tokens * K * sizeof(float));
  if (config_.routing.numSharedExperts > 0) sharedOut_ = Buffer(&backend_, tokens * config_.hiddenSize * sizeof(float));
  scratchTokens_ = tokens;
}

void FfnModel::forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out) {
  AFD_CHECK(layer >= 0 && layer < numLayers(), "FFN forward: layer " << layer << " is outside [0, " << numLayers() << ")");
  const FfnLayer& f = layers_[layer];
  const int64_t T = hidden.dim(0);
  AFD_CHECK(hidden.ndim == 2 && hidden.dim(1) == config_.hiddenSize && hidden.dtype == DType::F32,
            "FFN forward: hidden is " << dtypeName(hidden.dtype) << " " << hidden.shapeString() << ", expected f32 [tokens, "
                                      << config_.hiddenSize << "]");
  AFD_CHECK(out.ndim == 2 && out.dim(0) == T && out.dim(1) == config_.hiddenSize, "FFN forward: out has shape " << out.shapeString());
  if (T == 0) return;
  if (!f.moe) {
    backend_.siluGatedMlp(hidden, f.gate, f.up, f.down, out);
    return;
  }
  const int64_t E = config_.numExperts, K = config_.numExpertsPerTok;
  ensureScratch(T);
  Tensor logits;
  if (routerLogits != nullptr) {
    AFD_CHECK(routerLogits->ndim == 2 && routerLogits->dim(0) == T && routerLogits->dim(1) == E,
              "FFN forward: router logits have shape " << routerLogits->shapeString() << ", expected [" << T << ", " << E << "]");
    logits = *routerLogits;
  } else {
    AFD_CHECK(!gateOnAttention_, "FFN forward: layer " << layer << " needs router logits (the gate runs on attention) but none were given");
    logits = logits_.view(DType::F32, {T, E});
    backend_.matmul(hidden, f.routerGate, nullptr, logits);
  }
  Tensor ids = expertIds_.view(DType::I32, {T, K}), weights = expertWeights_.view(DType::F32, {T, K});
  if (router_) routeGrouped(f, logits, gateOnAttention_, ids, weights);
  else backend_.routerTopK(logits, static_cast<int>(K), config_.normTopkProb, ids, weights);
  backend_.moeExperts(hidden, ids, weights, f.experts, out);
  if (!f.shared.gate.empty()) addSharedExperts(f, hidden, out);
}

void LocalFfnExecutor::beginStep(const FfnStepInfo& info) { pending_.assign(info.stageTokenCounts.size(), Pending{}); }

void LocalFfnExecutor::submit(int layer, int stage, const Tensor& hidden, const Tensor* routerLogits) {
  AFD_CHECK(stage >= 0 && stage < static_cast<int>(pending_.size()), "FFN executor: stage " << stage << " was not announced by beginStep");
  pending_[stage] = Pending{layer, hidden, routerLogits ? *routerLogits : Tensor{}};
}

void LocalFfnExecutor::collect(int layer, int stage, Tensor& ffnOut) {
  AFD_CHECK(stage >= 0 && stage < static_cast<int>(pending_.size()) && pending_[stage].layer == layer,
            "FFN executor: collect(" << layer << ", " << stage << ") has no matching submit");
  Pending& p = pending_[stage];
  ffn_.forward(layer, p.hidden, p.routerLogits.empty() ? nullptr : &p.routerLogits, ffnOut);
  p.layer = -1;
}

}  // namespace afd
