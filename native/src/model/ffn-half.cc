// The FFN half of one decoder layer: dense MLP or router + top-k + experts.
#include "model/model.h"

namespace afd {

void FfnModel::ensureScratch(int64_t tokens) {
  if (tokens <= scratchTokens_) return;
  const int64_t E = std::max(1, config_.numExperts), K = std::max(1, config_.numExpertsPerTok);
  logits_ = Buffer(&backend_, tokens * E * sizeof(float));
  expertIds_ = Buffer(&backend_, tokens * K * sizeof(int32_t));
  expertWeights_ = Buffer(&backend_, tokens * K * sizeof(float));
  if (config_.routing.numSharedExperts > 0)
    sharedOut_ = Buffer(&backend_, tokens * config_.hiddenSize * dtypeBytes(backend_.activationDtype()));
  scratchTokens_ = tokens;
}

void FfnModel::forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out) {
  AFD_CHECK(layer >= 0 && layer < numLayers(), "FFN forward: layer " << layer << " is outside [0, " << numLayers() << ")");
  const FfnLayer& f = layers_[layer];
  const int64_t T = hidden.dim(0);
  const DType act = backend_.activationDtype();
  AFD_CHECK(hidden.ndim == 2 && hidden.dim(1) == config_.hiddenSize && hidden.dtype == act,
            "FFN forward: hidden is " << dtypeName(hidden.dtype) << " " << hidden.shapeString() << ", expected "
                                      << dtypeName(act) << " [tokens, " << config_.hiddenSize << "]");
  AFD_CHECK(out.ndim == 2 && out.dim(0) == T && out.dim(1) == config_.hiddenSize && out.dtype == act,
            "FFN forward: out is " << dtypeName(out.dtype) << " " << out.shapeString());
  if (T == 0) return;
  if (!f.moe) {
    backend_.siluGatedMlp(hidden, f.gate, f.up, f.down, out);
    return;
  }
  const int64_t E = config_.numExperts, K = config_.numExpertsPerTok;
  ensureScratch(T);
  MoeArgs a;
  if (routerLogits != nullptr) {
    AFD_CHECK(routerLogits->ndim == 2 && routerLogits->dim(0) == T && routerLogits->dim(1) == E,
              "FFN forward: router logits have shape " << routerLogits->shapeString() << ", expected [" << T << ", " << E << "]");
    a.routerLogits = routerLogits;
  } else {
    AFD_CHECK(!gateOnAttention_, "FFN forward: layer " << layer << " needs router logits (the gate runs on attention) but none were given");
    a.routerWeight = &f.routerGate;
  }
  a.topK = static_cast<int>(K);
  a.normTopk = config_.normTopkProb;
  a.logits = logits_.view(DType::F32, {T, E});
  a.expertIds = expertIds_.view(DType::I32, {T, K});
  a.expertWeights = expertWeights_.view(DType::F32, {T, K});
  a.experts = &f.experts;
  if (router_) moeGrouped(f, hidden, a, out);  // DeepSeek: grouped routing + shared experts (ffn-deepseek.cc)
  else backend_.moe(hidden, a, out);
}

}  // namespace afd
