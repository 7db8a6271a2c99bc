// The attention half of the model, built for the attention and colocated roles: the
// embedding, per layer the input norm, the attention module of the layer's kind
// (model/attention-module.h), the post-attention norm (and the router, when the gate runs
// on attention), then the final norm and the LM head.
#pragma once
#include <memory>
#include <vector>

#include "model/attention-module.h"
#include "model/grouped-router.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct AttentionLayer {
  Tensor inputNorm, postNorm;  // [H]
  AttentionModule* attention = nullptr;  // the module of the layer's kind (owned by AttentionModel)
  Tensor routerGate;           // [E, H], only when the gate runs on attention (MoE layers)
  Tensor routerBias;           // [E] score correction bias, with the gate (noaux_tc)
};

class AttentionModel {
 public:
  AttentionModel(const ModelConfig& config, const WeightStore& store, Backend& backend, bool gateOnAttention);

  // One layer's attention half for one stage. firstLayer: hidden holds embeddings and
  // there is no previous FFN output to add. mla layers pass their latent cache as kCache
  // and an empty vCache.
  void forwardLayer(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                    Tensor& vCache);
  // Residual add of the last FFN output + final norm: out = norm(hidden += ffnOut).
  void finalNorm(Tensor& hidden, const Tensor& ffnOut, Tensor& out);

  bool routerOnAttention(int layer) const { return !layers_[layer].routerGate.empty(); }
  const Tensor& embedTable() const { return embed_; }
  const Tensor& lmHeadWeight() const { return lmHead_; }

 private:
  const ModelConfig& config_;
  Backend& backend_;
  Tensor embed_, finalNorm_, lmHead_;
  std::vector<AttentionLayer> layers_;
  Buffer invFreq_;
  RopeParams rope_;
  std::vector<std::unique_ptr<AttentionModule>> modules_;  // one per attention kind the layers use
  // Grouped routing with the gate on attention: router logits -> dense routing weights.
  std::unique_ptr<GroupedRouter> router_;
};

}  // namespace afd
