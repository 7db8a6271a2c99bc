#include "model/dense-ffn.h"

namespace afd {

DenseFfn::DenseFfn(const ModelConfig& c, const WeightStore& store, Backend& backend) : backend_(backend) {
  const int64_t H = c.hiddenSize, I = c.intermediateSize;
  layers_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].ffn != FfnKind::Dense) continue;
    layers_[L].gate = store.get(layerSlot(L, slot::kGateProj), {I, H});
    layers_[L].up = store.get(layerSlot(L, slot::kUpProj), {I, H});
    layers_[L].down = store.get(layerSlot(L, slot::kDownProj), {H, I});
  }
}

void DenseFfn::forward(int layer, const Tensor& hidden, const Tensor*, Tensor& out) {
  const ExpertWeights& w = layers_[layer];
  backend_.siluGatedMlp(hidden, w.gate, w.up, w.down, out);
}

}  // namespace afd
