#include "model/mla-attention.h"

#include <string>

#include "model/model.h"

namespace afd {

MlaAttention::MlaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend) : c_(c), backend_(backend) {
  const MlaConfig& m = c.mla;
  const int64_t H = c.hiddenSize, nH = c.numHeads, Dq = m.qkHeadDim(), L = m.kvLoraRank;
  layers_.resize(c.numLayers);
  for (int layer = 0; layer < c.numLayers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
    MlaLayerWeights& w = layers_[layer];
    if (m.qLoraRank == 0) {
      w.qProj = store.get(p + "q_proj.weight", {nH * Dq, H});
    } else {
      w.qA = store.get(p + "q_a_proj.weight", {m.qLoraRank, H});
      w.qANorm = store.get(p + "q_a_layernorm.weight", {m.qLoraRank});
      w.qB = store.get(p + "q_b_proj.weight", {nH * Dq, m.qLoraRank});
    }
    w.kvA = store.get(p + "kv_a_proj_with_mqa.weight", {m.latentRowDim(), H});
    w.kvANorm = store.get(p + "kv_a_layernorm.weight", {L});
    w.kvB = store.get(p + "kv_b_proj.weight", {nH * (m.qkNopeHeadDim + m.vHeadDim), L});
    w.o = store.get(p + "o_proj.weight", {H, nH * m.vHeadDim});
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

void MlaAttention::forward(int layer, const AttentionStageInputs& in, const Tensor& normed, const RopeParams& rope,
                           Tensor& latentCache, Tensor& hidden) {
  const MlaConfig& m = c_.mla;
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
  backend_.mlaNormRope(q3, kva, w.kvANorm, kLoraNormEps, in.positions, rope, m.ropeInterleave);
  backend_.writeLatentCache(kva, in.slotMapping, latentCache);
  Tensor attn = attn_.view(DType::F32, {T, nH, m.vHeadDim});
  backend_.mlaAttention(q3, latentCache, w.kvB, in.batch, static_cast<float>(m.softmaxScale), attn);
  backend_.matmulAdd(attn.reshape({T, nH * m.vHeadDim}), w.o, nullptr, hidden);
}

}  // namespace afd
