// The role-split model. One definition (ArchDef + config), built for a role:
//   colocated: AttentionModel + FfnModel;  attention: AttentionModel;  ffn: FfnModel.
// Each half holds only its own weights (views into the WeightStore).
//   attention half per layer: input RMSNorm (fused with the previous residual add), q/k/v
//     projections, q/k head norm, RoPE, KV-cache write, paged attention, o_proj, residual
//     add fused with the post-attention RMSNorm (+ router logits when the gate is on
//     attention). It then hands the normed hidden states to the FfnExecutor.
//   FFN half per layer: dense SiLU MLP, or router (unless on attention) + top-k + experts.
//   DeepSeek-V2/V3: MLA (model/mla-attention.h) in place of q/k/v/o and a latent KV
//   cache; grouped routing (model/grouped-router.h) and shared experts in the FFN half.
#pragma once
#include <memory>
#include <vector>

#include "core/backend.h"
#include "model/arch.h"
#include "model/grouped-router.h"
#include "model/mla-attention.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct AttentionLayer {
  Tensor inputNorm, postNorm;        // [H]
  Tensor q, k, v, o;                 // [nH*D, H], [nKv*D, H], [nKv*D, H], [H, nH*D]
  Tensor qBias, kBias, vBias, oBias;  // optional (attention_bias)
  Tensor qNorm, kNorm;               // [D], Qwen3 only
  Tensor routerGate;                 // [E, H], only when the gate runs on attention
  Tensor routerBias;                 // [E] DeepSeek-V3 score correction bias, with the gate
};

struct FfnLayer {
  bool moe = false;
  Tensor gate, up, down;               // dense: [I, H], [I, H], [H, I]
  Tensor routerGate;                   // [E, H] when the gate runs on the FFN side
  std::vector<ExpertWeights> experts;  // [E]
  Tensor routerBias;                   // [E] DeepSeek-V3 score correction bias, with the gate
  ExpertWeights shared;                // DeepSeek shared experts (one MLP of I x n_shared), or empty
};

// Per-stage inputs of the attention half (device tensors, rows of one stage).
struct AttentionStageInputs {
  Tensor positions;    // [T_s] i32
  Tensor slotMapping;  // [T_s] i32 cache slot of each token
  AttentionBatch batch;  // tokenSeq relative to this stage's blockTables rows
};

// Activations of the attention half for one stage: row views of the step workspace.
struct AttentionStageTensors {
  Tensor hidden;   // [T_s, H] residual stream (in/out)
  Tensor normed;   // [T_s, H] out: post-attention-normed hidden (what the FFN half gets)
  Tensor q;        // [T_s, nH, D] scratch
  Tensor k, v;     // [T_s, nKv, D] scratch
  Tensor attn;     // [T_s, nH, D] scratch
  Tensor proj;     // [T_s, H] scratch (o_proj output)
  Tensor routerLogits;  // [T_s, E] out, when the layer's gate runs on attention
  Tensor ffnOut;   // [T_s, H] FFN output of the previous layer (added before the input norm)
};

class AttentionModel {
 public:
  AttentionModel(const ModelConfig& config, const ArchDef& arch, const WeightStore& store, Backend& backend,
                 bool gateOnAttention);

  // One layer's attention half for one stage. firstLayer: hidden holds embeddings and
  // there is no previous FFN output to add. MLA models (DeepSeek) pass their latent cache
  // as kCache and an empty vCache.
  void forwardLayer(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                    Tensor& vCache);
  // Residual add of the last FFN output + final norm: out = norm(hidden += ffnOut).
  void finalNorm(Tensor& hidden, const Tensor& ffnOut, Tensor& out);

  bool routerOnAttention(int layer) const { return !layers_[layer].routerGate.empty(); }
  const Tensor& embedTable() const { return embed_; }
  const Tensor& lmHeadWeight() const { return lmHead_; }

 private:
  void gqa(const AttentionLayer& w, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache, Tensor& vCache);

  const ModelConfig& config_;
  Backend& backend_;
  Tensor embed_, finalNorm_, lmHead_;
  std::vector<AttentionLayer> layers_;
  Buffer invFreq_;
  RopeParams rope_;
  // DeepSeek: MLA replaces q/k/v/o; the grouped router turns logits into dense weights.
  std::unique_ptr<MlaAttention> mla_;
  std::unique_ptr<GroupedRouter> router_;
};

class FfnModel {
 public:
  FfnModel(const ModelConfig& config, const ArchDef& arch, const WeightStore& store, Backend& backend,
           bool gateOnAttention);

  // hidden: [T, H] f32 (post-attention-normed); routerLogits: [T, E] f32 or null (null:
  // compute them here; required when the gate runs on attention); out: [T, H] f32.
  void forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out);
  int numLayers() const { return static_cast<int>(layers_.size()); }
  bool isMoe(int layer) const { return layers_[layer].moe; }

 private:
  void ensureScratch(int64_t tokens);
  // DeepSeek (ffn-deepseek.cc): grouped routing, and the shared experts added to out.
  void routeGrouped(const FfnLayer& f, const Tensor& logits, bool denseFromAttention, Tensor& ids, Tensor& weights);
  void addSharedExperts(const FfnLayer& f, const Tensor& hidden, Tensor& out);

  const ModelConfig& config_;
  Backend& backend_;
  bool gateOnAttention_;
  std::vector<FfnLayer> layers_;
  int64_t scratchTokens_ = 0;
  Buffer logits_, expertIds_, expertWeights_;
  std::unique_ptr<GroupedRouter> router_;  // DeepSeek
  Buffer sharedOut_;                       // [T, H] shared-expert output (DeepSeek)
};

}  // namespace afd
