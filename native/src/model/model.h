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
  Tensor inputNorm, postNorm;  // [H]
  Tensor qkv;                  // [(nH + 2 nKv) D, H]: q_proj, k_proj, v_proj rows back to back
  Tensor o;                    // [H, nH D]
  Tensor qkvBias, oBias;       // optional (attention_bias): [(nH + 2 nKv) D], [H]
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

// The tensors stored fused (back to back) for one GEMM: per layer q/k/v projections as
// model.layers.L.self_attn.qkv_proj.{weight,bias}.
std::vector<FusedTensor> fusedTensors(const ModelConfig& config);

// Per-stage inputs of the attention half (device tensors, rows of one stage).
struct AttentionStageInputs {
  Tensor positions;    // [T_s] i32
  Tensor slotMapping;  // [T_s] i32 cache slot of each token
  AttentionBatch batch;  // tokenSeq relative to this stage's blockTables rows
};

// Activations of the attention half for one stage: row views of the step workspace.
// "act" = the backend's activationDtype().
struct AttentionStageTensors {
  Tensor hidden;   // [T_s, H] f32 residual stream (in/out)
  Tensor normed;   // [T_s, H] act out: post-attention-normed hidden (what the FFN half gets)
  Tensor qkv;      // [T_s, (nH + 2 nKv) D] f32 scratch (fused projection)
  Tensor q;        // [T_s, nH, D] f32 scratch
  Tensor attn;     // [T_s, nH, D] f32 scratch
  Tensor routerLogits;  // [T_s, E] f32 out, when the layer's gate runs on attention
  Tensor ffnOut;   // [T_s, H] act: FFN output of the previous layer (added before the input norm)
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
  // experts: the routed experts to load (expert parallelism: this FFN rank's range; the
  // others stay empty and must not be routed to here).
  FfnModel(const ModelConfig& config, const ArchDef& arch, const WeightStore& store, Backend& backend,
           bool gateOnAttention, ExpertRange experts);

  // hidden: [T, H] act (post-attention-normed); routerLogits: [T, E] f32 or null (null:
  // compute them here; required when the gate runs on attention); out: [T, H] act.
  void forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out);
  int numLayers() const { return static_cast<int>(layers_.size()); }
  bool isMoe(int layer) const { return layers_[layer].moe; }
  // Expert parallelism (runtime/ep-*.cc) routes and runs the experts itself (ffn-ep.cc):
  // the layer's routing as forward() does it (hidden [T, H] act; routerLogits [T, E] f32 or
  // null; logits [T, E] f32 scratch; expertIds / expertWeights [T, K] out), and its shared
  // experts (DeepSeek; out [T, H] act).
  void route(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& logits, Tensor& expertIds,
             Tensor& expertWeights);
  bool hasSharedExperts(int layer) const { return !layers_[layer].shared.gate.empty(); }
  void sharedExperts(int layer, const Tensor& hidden, Tensor& out);
  const FfnLayer& layerWeights(int layer) const { return layers_[layer]; }
  const ExpertRange& expertRange() const { return experts_; }
  Backend& backend() const { return backend_; }
  const ModelConfig& config() const { return config_; }

 private:
  void ensureScratch(int64_t tokens);
  // DeepSeek (ffn-deepseek.cc): grouped routing, routed experts plus the shared experts.
  void moeGrouped(const FfnLayer& f, const Tensor& hidden, MoeArgs& a, Tensor& out);

  const ModelConfig& config_;
  Backend& backend_;
  bool gateOnAttention_;
  ExpertRange experts_;
  std::vector<FfnLayer> layers_;
  int64_t scratchTokens_ = 0;
  Buffer logits_, expertIds_, expertWeights_;
  std::unique_ptr<GroupedRouter> router_;  // DeepSeek
  Buffer sharedOut_;                       // [T, H] act: shared-expert output (DeepSeek)
};

}  // namespace afd
