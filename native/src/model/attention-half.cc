// The attention half of one decoder layer for one stage, and the final norm.
#include <cmath>

#include "model/model.h"

namespace afd {

void AttentionModel::forwardLayer(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                                  Tensor& vCache) {
  const AttentionLayer& w = layers_[layer];
  const float eps = static_cast<float>(config_.rmsNormEps);
  // normed: [T, H] act = rmsNorm(hidden (+= previous FFN output)).
  if (t.ffnOut.empty()) backend_.rmsNorm(t.hidden, w.inputNorm, eps, t.normed);
  else backend_.addRmsNorm(t.ffnOut, t.hidden, w.inputNorm, eps, t.normed);
  // hidden += o_proj(attention(normed)).
  if (mla_) mla_->forward(layer, in, t.normed, rope_, kCache, t.hidden);  // DeepSeek: kCache is the latent cache
  else gqa(w, in, t, kCache, vCache);
  // normed = postNorm(hidden).
  backend_.rmsNorm(t.hidden, w.postNorm, eps, t.normed);
  if (!w.routerGate.empty()) {
    backend_.matmul(t.normed, w.routerGate, nullptr, t.routerLogits);
    if (router_) router_->toDense(t.routerLogits, w.routerBias);
  }
}

// q/k/v in one GEMM, q/k head norm, RoPE, KV-cache write, paged attention; hidden += o_proj.
void AttentionModel::gqa(const AttentionLayer& w, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                         Tensor& vCache) {
  const float eps = static_cast<float>(config_.rmsNormEps);
  const int64_t T = t.hidden.dim(0), nH = config_.numHeads, D = config_.headDim;
  // qkv: [T, (nH + 2 nKv) D] f32 in one GEMM; q normed + roped, k/v into the cache.
  backend_.matmul(t.normed, w.qkv, w.qkvBias.empty() ? nullptr : &w.qkvBias, t.qkv);
  backend_.qkNormRopeCache(t.qkv, in.positions, in.slotMapping, w.qNorm.empty() ? nullptr : &w.qNorm,
                           w.kNorm.empty() ? nullptr : &w.kNorm, eps, rope_, t.q, kCache, vCache);
  backend_.pagedAttention(t.q, kCache, vCache, in.batch, 1.0f / std::sqrt(static_cast<float>(D)), t.attn);
  backend_.matmulAdd(t.attn.reshape({T, nH * D}), w.o, w.oBias.empty() ? nullptr : &w.oBias, t.hidden);
}

void AttentionModel::finalNorm(Tensor& hidden, const Tensor& ffnOut, Tensor& out) {
  backend_.addRmsNorm(ffnOut, hidden, finalNorm_, static_cast<float>(config_.rmsNormEps), out);
}

}  // namespace afd
