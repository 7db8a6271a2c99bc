// The attention half of one decoder layer for one stage, and the final norm.
#include <cmath>

#include "model/model.h"

namespace afd {

void AttentionModel::forwardLayer(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                                  Tensor& vCache) {
  const AttentionLayer& w = layers_[layer];
  const float eps = static_cast<float>(config_.rmsNormEps);
  // normed: [T, H] = rmsNorm(hidden (+= previous FFN output)).
  if (t.ffnOut.empty()) backend_.rmsNorm(t.hidden, w.inputNorm, eps, t.normed);
  else backend_.addRmsNorm(t.ffnOut, t.hidden, w.inputNorm, eps, t.normed);
  if (mla_) {
    mla_->forward(layer, in, t.normed, rope_, kCache, t.proj);  // DeepSeek: kCache is the latent cache
  } else {
    gqa(w, in, t, kCache, vCache);
  }
  backend_.addRmsNorm(t.proj, t.hidden, w.postNorm, eps, t.normed);
  if (!w.routerGate.empty()) {
    backend_.matmul(t.normed, w.routerGate, nullptr, t.routerLogits);
    if (router_) router_->toDense(t.routerLogits, w.routerBias);
  }
}

// q/k/v projections, q/k head norm, RoPE, KV-cache write, paged attention, o_proj -> t.proj.
void AttentionModel::gqa(const AttentionLayer& w, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                         Tensor& vCache) {
  const float eps = static_cast<float>(config_.rmsNormEps);
  const int64_t T = t.hidden.dim(0), nH = config_.numHeads, nKv = config_.numKvHeads, D = config_.headDim;
  // q: [T, nH*D], k, v: [T, nKv*D].
  Tensor q2 = t.q.reshape({T, nH * D}), k2 = t.k.reshape({T, nKv * D}), v2 = t.v.reshape({T, nKv * D});
  backend_.matmul(t.normed, w.q, w.qBias.empty() ? nullptr : &w.qBias, q2);
  backend_.matmul(t.normed, w.k, w.kBias.empty() ? nullptr : &w.kBias, k2);
  backend_.matmul(t.normed, w.v, w.vBias.empty() ? nullptr : &w.vBias, v2);
  backend_.qkNormRope(t.q, t.k, in.positions, w.qNorm.empty() ? nullptr : &w.qNorm, w.kNorm.empty() ? nullptr : &w.kNorm,
                      eps, rope_);
  backend_.writeKvCache(t.k, t.v, in.slotMapping, kCache, vCache);
  backend_.pagedAttention(t.q, kCache, vCache, in.batch, 1.0f / std::sqrt(static_cast<float>(D)), t.attn);
  // proj: [T, H] = attn @ o^T (hidden += proj; normed = postNorm(hidden) follow in forwardLayer).
  backend_.matmul(t.attn.reshape({T, nH * D}), w.o, w.oBias.empty() ? nullptr : &w.oBias, t.proj);
}

void AttentionModel::finalNorm(Tensor& hidden, const Tensor& ffnOut, Tensor& out) {
  backend_.addRmsNorm(ffnOut, hidden, finalNorm_, static_cast<float>(config_.rmsNormEps), out);
}

}  // namespace afd
