#include "model/mla-attention.h"

#include <algorithm>

namespace afd {

MlaAttention::MlaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend, const RopeParams& rope)
    : c_(c), backend_(backend), rope_(rope) {
  const MlaConfig& m = c.mla;
  const int64_t H = c.hiddenSize, nH = c.numHeads, Dq = m.qkHeadDim(), L = m.kvLoraRank;
  layers_.resize(c.numLayers);
  for (int layer = 0; layer < c.numLayers; ++layer) {
    if (c.layers[layer].attention != AttentionKind::Mla) continue;
    auto at = [layer](const char* name) { return layerSlot(layer, name); };
    MlaLayerWeights& w = layers_[layer];
    if (m.qLoraRank == 0) {
      w.qProj = store.get(at(slot::kQProj), {nH * Dq, H});
    } else {
      w.qA = store.get(at(slot::kQAProj), {m.qLoraRank, H});
      w.qANorm = store.get(at(slot::kQANorm), {m.qLoraRank});
      w.qB = store.get(at(slot::kQBProj), {nH * Dq, m.qLoraRank});
    }
    w.kvA = store.get(at(slot::kKvAProj), {m.latentRowDim(), H});
    w.kvANorm = store.get(at(slot::kKvANorm), {L});
    w.kvB = store.get(at(slot::kKvBProj), {nH * (m.qkNopeHeadDim + m.vHeadDim), L});
    w.o = store.get(at(slot::kOProj), {H, nH * m.vHeadDim});
  }
}

void MlaAttention::reserve(int64_t tokens) {
  if (tokens <= tokens_) return;
  const MlaConfig& m = c_.mla;
  const int64_t n = std::max<int64_t>(tokens, tokens_ * 2), f = sizeof(float);
  q_ = Buffer(&backend_, n * c_.numHeads * m.qkHeadDim() * f);
  qA_ = Buffer(&backend_, n * std::max<int64_t>(1, m.qLoraRank) * f);
  kvA_ = Buffer(&backend_, n * m.latentRowDim() * f);
  attn_ = Buffer(&backend_, n * c_.numHeads * m.vHeadDim * f);
  tokens_ = n;
}

void MlaAttention::forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& latentCache, Tensor&) {
  const MlaConfig& m = c_.mla;
  const Tensor& normed = t.normed;
  const MlaLayerWeights& w = layers_[layer];
  const int64_t T = normed.dim(0), nH = c_.numHeads;
  if (T == 0) return;
  reserve(T);
  Tensor q = q_.view(DType::F32, {T, nH * m.qkHeadDim()});
  if (!w.qProj.empty()) {
    backend_.matmul(normed, w.qProj, nullptr, q);
  } else {
    Tensor qa = qA_.view(DType::F32, {T, m.qLoraRank});
    backend_.matmul(normed, w.qA, nullptr, qa);
    backend_.rmsNorm(qa, w.qANorm, kLoraNormEps, qa);
    backend_.matmul(qa, w.qB, nullptr, q);
  }
  Tensor kva = kvA_.view(DType::F32, {T, m.latentRowDim()});
  backend_.matmul(normed, w.kvA, nullptr, kva);
  Tensor q3 = q.reshape({T, nH, m.qkHeadDim()});
  backend_.mlaNormRope(q3, kva, w.kvANorm, kLoraNormEps, in.positions, rope_, m.ropeInterleave);
  backend_.writeLatentCache(kva, in.slotMapping, latentCache);
  Tensor attn = attn_.view(DType::F32, {T, nH, m.vHeadDim});
  backend_.mlaAttention(q3, latentCache, w.kvB, in.batch, static_cast<float>(m.softmaxScale), attn);
  backend_.matmulAdd(attn.reshape({T, nH * m.vHeadDim}), w.o, nullptr, t.hidden);
}

}  // namespace afd
