#include "model/attention-model.h"

#include "model/gdn-attention.h"
#include "model/gqa-attention.h"
#include "model/mla-attention.h"
#include "model/rope-table.h"

namespace afd {
namespace {

// The module of one attention kind, over every layer of that kind. A new kind is a new
// module and a case here.
std::unique_ptr<AttentionModule> makeAttentionModule(AttentionKind kind, const ModelConfig& c, const WeightStore& store,
                                                     Backend& backend, const RopeParams& rope) {
  switch (kind) {
    case AttentionKind::Gqa:
    case AttentionKind::GqaGated: return std::make_unique<GqaAttention>(c, store, backend, rope, kind);
    case AttentionKind::Mla: return std::make_unique<MlaAttention>(c, store, backend, rope);
    case AttentionKind::Gdn: return std::make_unique<GdnAttention>(c, store, backend);
  }
  AFD_FAIL("no attention module for kind " << static_cast<int>(kind));
}

}  // namespace

AttentionModel::AttentionModel(const ModelConfig& c, const WeightStore& store, Backend& backend, bool gateOnAttention)
    : config_(c), backend_(backend) {
  const int64_t H = c.hiddenSize;
  embed_ = store.get(modelSlot(slot::kEmbed), {c.vocabSize, H});
  finalNorm_ = store.get(modelSlot(slot::kFinalNorm), {H});
  lmHead_ = store.find(modelSlot(slot::kLmHead), {c.vocabSize, H});
  if (lmHead_.empty()) {
    AFD_CHECK(c.tieWordEmbeddings, "slot lm_head is empty and tie_word_embeddings is false; the checkpoint is incomplete");
    lmHead_ = embed_;
  }
  const std::vector<float> inv = ropeInvFreq(c);
  invFreq_ = Buffer(&backend, inv.size() * sizeof(float));
  backend.copyToDevice(invFreq_.data(), inv.data(), inv.size() * sizeof(float));
  rope_.invFreq = invFreq_.view(DType::F32, {static_cast<int64_t>(inv.size())});
  rope_.attentionScale = ropeAttentionScale(c);
  layers_.resize(c.numLayers);
  for (AttentionKind kind : {AttentionKind::Gqa, AttentionKind::Mla, AttentionKind::GqaGated, AttentionKind::Gdn}) {
    if (!c.hasAttentionKind(kind)) continue;
    modules_.push_back(makeAttentionModule(kind, c, store, backend, rope_));
    for (int L = 0; L < c.numLayers; ++L)
      if (c.layers[L].attention == kind) layers_[L].attention = modules_.back().get();
  }
  for (int L = 0; L < c.numLayers; ++L) {
    AttentionLayer& a = layers_[L];
    a.inputNorm = store.get(layerSlot(L, slot::kInputNorm), {H});
    a.postNorm = store.get(layerSlot(L, slot::kPostAttentionNorm), {H});
    if (gateOnAttention && c.isMoeLayer(L)) {
      a.routerGate = store.get(layerSlot(L, slot::kRouter), {c.numExperts, H});
      a.routerBias = store.find(layerSlot(L, slot::kRouterBias), {c.numExperts});
      AFD_CHECK(a.routerBias.empty() != c.routing.scoreCorrectionBias,
                "layer " << L << ": slot " << slot::kRouterBias << (a.routerBias.empty() ? " is required by" : " is unused without")
                         << " the noaux_tc score correction (config.routing.scoreCorrectionBias)");
    }
  }
  if (gateOnAttention && c.routing.grouped) router_ = std::make_unique<GroupedRouter>(c, backend);
}

void AttentionModel::forwardLayer(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                                  Tensor& vCache) {
  const AttentionLayer& w = layers_[layer];
  const float eps = static_cast<float>(config_.rmsNormEps);
  // normed: [T, H] act = rmsNorm(hidden (+= previous FFN output)).
  if (t.ffnOut.empty()) backend_.rmsNorm(t.hidden, w.inputNorm, eps, t.normed);
  else backend_.addRmsNorm(t.ffnOut, t.hidden, w.inputNorm, eps, t.normed);
  // hidden += o_proj(attention(normed)).
  w.attention->forward(layer, in, t, kCache, vCache);
  // normed = postNorm(hidden).
  backend_.rmsNorm(t.hidden, w.postNorm, eps, t.normed);
  if (!w.routerGate.empty()) {
    backend_.matmul(t.normed, w.routerGate, nullptr, t.routerLogits);
    if (router_) router_->toDense(t.routerLogits, w.routerBias);
  }
}

void AttentionModel::finalNorm(Tensor& hidden, const Tensor& ffnOut, Tensor& out) {
  backend_.addRmsNorm(ffnOut, hidden, finalNorm_, static_cast<float>(config_.rmsNormEps), out);
}

}  // namespace afd
