// gqa attention (grouped-query; multi-head when numKvHeads = numHeads), for the layers of
// kind gqa, and of kind gqa_gated (Qwen3-Next) with the gate:
//   qkv    = normed @ [q_proj | k_proj | v_proj] (+ biases)      [T, (nH + 2 nKv) D] f32
//   q, k   = per-head RMSNorm (q_norm / k_norm slots, when bound), then RoPE
//   cache  <- k, v;  attn = paged attention over the cache       [T, nH, D]
//   gated: attn *= sigmoid(normed @ gate rows of q_proj)         [T, nH D]
//   hidden += o_proj(attn) (+ o bias)                            [T, H] f32
// gqa_gated's q_proj [2 nH D, H] holds per head D query rows then D gate rows; the fused
// slot regroups them (gqaFusedTensors) so the query rows join k and v in one GEMM and the
// gate rows form a second one.
#pragma once
#include <vector>

#include "model/attention-module.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct GqaLayerWeights {
  Tensor qkv;             // [(nH + 2 nKv) D, H]: the q, k and v slots' rows back to back
  Tensor gate;            // gqa_gated: [nH D, H], the gate rows of q_proj; else empty
  Tensor o;               // [H, nH D]
  Tensor qkvBias, oBias;  // optional: [(nH + 2 nKv) D], [H]
  Tensor gateBias;        // gqa_gated with biases: [nH D]
  Tensor qNorm, kNorm;    // optional (both or neither): [D]
};

class GqaAttention : public AttentionModule {
 public:
  // Binds the slots of every layer of `kind` (Gqa or GqaGated); rope outlives the module
  // (AttentionModel's).
  GqaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend, const RopeParams& rope, AttentionKind kind);

  void forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache, Tensor& vCache) override;

 private:
  const ModelConfig& c_;
  Backend& backend_;
  const RopeParams& rope_;
  std::vector<GqaLayerWeights> layers_;  // [numLayers]; empty for layers of another kind
  Buffer gate_;                          // gqa_gated: [T, nH D] f32 gate logits, grown to the largest stage
  int64_t gateTokens_ = 0;
};

// The q/k/v projections (and biases) of every gqa and gqa_gated layer, stored fused for
// one GEMM (gqa_gated: rows regrouped as [queries | k | v | gates]).
std::vector<FusedTensor> gqaFusedTensors(const ModelConfig& c);

}  // namespace afd
