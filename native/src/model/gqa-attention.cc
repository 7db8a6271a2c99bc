#include "model/gqa-attention.h"

#include <cmath>

namespace afd {

std::vector<FusedTensor> gqaFusedTensors(const ModelConfig& c) {
  std::vector<FusedTensor> groups;
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].attention != AttentionKind::Gqa) continue;
    groups.push_back({layerSlot(L, slot::kQkvProj), {layerSlot(L, slot::kQProj), layerSlot(L, slot::kKProj), layerSlot(L, slot::kVProj)}});
    groups.push_back({layerSlot(L, slot::kQkvBias), {layerSlot(L, slot::kQBias), layerSlot(L, slot::kKBias), layerSlot(L, slot::kVBias)}});
  }
  return groups;
}

GqaAttention::GqaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend, const RopeParams& rope)
    : c_(c), backend_(backend), rope_(rope) {
  const int64_t H = c.hiddenSize, D = c.headDim, qDim = c.numHeads * D, kvDim = c.numKvHeads * D;
  layers_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].attention != AttentionKind::Gqa) continue;
    GqaLayerWeights& w = layers_[L];
    auto at = [L](const char* name) { return layerSlot(L, name); };
    // Checked one by one for the error message, read through the fused group.
    store.get(at(slot::kQProj), {qDim, H});
    store.get(at(slot::kKProj), {kvDim, H});
    store.get(at(slot::kVProj), {kvDim, H});
    w.qkv = store.get(at(slot::kQkvProj), {qDim + 2 * kvDim, H});
    w.o = store.get(at(slot::kOProj), {H, qDim});
    const Tensor qBias = store.find(at(slot::kQBias), {qDim});
    if (!qBias.empty()) {
      store.get(at(slot::kKBias), {kvDim});
      store.get(at(slot::kVBias), {kvDim});
      w.qkvBias = store.get(at(slot::kQkvBias), {qDim + 2 * kvDim});
    }
    w.oBias = store.find(at(slot::kOBias), {H});
    w.qNorm = store.find(at(slot::kQNorm), {D});
    w.kNorm = store.find(at(slot::kKNorm), {D});
    AFD_CHECK(w.qNorm.empty() == w.kNorm.empty(),
              "layer " << L << ": the q/k head norms go together, but only " << (w.qNorm.empty() ? slot::kKNorm : slot::kQNorm)
                       << " is in the load spec");
  }
}

// q/k/v in one GEMM, q/k head norm, RoPE, KV-cache write, paged attention; hidden += o_proj.
void GqaAttention::forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache, Tensor& vCache) {
  const GqaLayerWeights& w = layers_[layer];
  const float eps = static_cast<float>(c_.rmsNormEps);
  const int64_t T = t.hidden.dim(0), nH = c_.numHeads, D = c_.headDim;
  // qkv: [T, (nH + 2 nKv) D] f32 in one GEMM; q normed + roped, k/v into the cache.
  backend_.matmul(t.normed, w.qkv, w.qkvBias.empty() ? nullptr : &w.qkvBias, t.qkv);
  backend_.qkNormRopeCache(t.qkv, in.positions, in.slotMapping, w.qNorm.empty() ? nullptr : &w.qNorm,
                           w.kNorm.empty() ? nullptr : &w.kNorm, eps, rope_, t.q, kCache, vCache);
  backend_.pagedAttention(t.q, kCache, vCache, in.batch, 1.0f / std::sqrt(static_cast<float>(D)), t.attn);
  backend_.matmulAdd(t.attn.reshape({T, nH * D}), w.o, w.oBias.empty() ? nullptr : &w.oBias, t.hidden);
}

}  // namespace afd
