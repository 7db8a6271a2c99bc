#include "model/ffn-model.h"

#include <algorithm>

namespace afd {

FfnModel::FfnModel(const ModelConfig& c, const WeightStore& store, Backend& backend, bool gateOnAttention, ExpertRange experts)
    : config_(c), backend_(backend), experts_(experts) {
  AFD_CHECK(experts.start >= 0 && experts.start <= experts.end && experts.end <= std::max(0, c.numExperts),
            "expert range [" << experts.start << ", " << experts.end << ") is outside the model's " << c.numExperts << " experts");
  if (c.hasFfnKind(FfnKind::Dense)) dense_ = std::make_unique<DenseFfn>(c, store, backend);
  if (c.hasFfnKind(FfnKind::Moe) || c.hasFfnKind(FfnKind::MoeShared) || c.hasFfnKind(FfnKind::MoeGatedShared))
    moe_ = std::make_unique<MoeFfn>(c, store, backend, gateOnAttention, experts);
  modules_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    // A new kind is a new module and a case here.
    switch (c.layers[L].ffn) {
      case FfnKind::Dense: modules_[L] = dense_.get(); break;
      case FfnKind::Moe:
      case FfnKind::MoeShared:
      case FfnKind::MoeGatedShared: modules_[L] = moe_.get(); break;
    }
  }
}

void FfnModel::forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out) {
  AFD_CHECK(layer >= 0 && layer < numLayers(), "FFN forward: layer " << layer << " is outside [0, " << numLayers() << ")");
  const int64_t T = hidden.dim(0);
  const DType act = backend_.activationDtype();
  AFD_CHECK(hidden.ndim == 2 && hidden.dim(1) == config_.hiddenSize && hidden.dtype == act,
            "FFN forward: hidden is " << dtypeName(hidden.dtype) << " " << hidden.shapeString() << ", expected "
                                      << dtypeName(act) << " [tokens, " << config_.hiddenSize << "]");
  AFD_CHECK(out.ndim == 2 && out.dim(0) == T && out.dim(1) == config_.hiddenSize && out.dtype == act,
            "FFN forward: out is " << dtypeName(out.dtype) << " " << out.shapeString());
  if (T == 0) return;
  modules_[layer]->forward(layer, hidden, routerLogits, out);
}

const MoeFfn& FfnModel::moeOf(int layer, const char* what) const {
  AFD_CHECK(layer >= 0 && layer < numLayers() && isMoe(layer), "FFN " << what << ": layer " << layer << " is not an MoE layer");
  return *moe_;
}

void FfnModel::route(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& logits, Tensor& expertIds,
                     Tensor& expertWeights) {
  moeOf(layer, "route");
  moe_->route(layer, hidden, routerLogits, logits, expertIds, expertWeights);
}

void FfnModel::sharedExperts(int layer, const Tensor& hidden, Tensor& out) {
  moeOf(layer, "shared experts");
  moe_->sharedExperts(layer, hidden, out);
}

const MoeLayerWeights& FfnModel::layerWeights(int layer) const { return moeOf(layer, "layer weights").weights(layer); }

}  // namespace afd
