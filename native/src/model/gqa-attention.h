// gqa attention (grouped-query; multi-head when numKvHeads = numHeads), for the layers of
// kind gqa:
//   qkv    = normed @ [q_proj | k_proj | v_proj] (+ biases)      [T, (nH + 2 nKv) D] f32
//   q, k   = per-head RMSNorm (q_norm / k_norm slots, when bound), then RoPE
//   cache  <- k, v;  attn = paged attention over the cache       [T, nH, D]
//   hidden += o_proj(attn) (+ o bias)                            [T, H] f32
#pragma once
#include <vector>

#include "model/attention-module.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct GqaLayerWeights {
  Tensor qkv;             // [(nH + 2 nKv) D, H]: the q, k and v slots' rows back to back
  Tensor o;               // [H, nH D]
  Tensor qkvBias, oBias;  // optional: [(nH + 2 nKv) D], [H]
  Tensor qNorm, kNorm;    // optional (both or neither): [D]
};

class GqaAttention : public AttentionModule {
 public:
  // Binds the slots of every gqa layer; rope outlives the module (AttentionModel's).
  GqaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend, const RopeParams& rope);

  void forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache, Tensor& vCache) override;

 private:
  const ModelConfig& c_;
  Backend& backend_;
  const RopeParams& rope_;
  std::vector<GqaLayerWeights> layers_;  // [numLayers]; empty for layers of another kind
};

// The q/k/v projections (and biases) of every gqa layer, stored fused for one GEMM.
std::vector<FusedTensor> gqaFusedTensors(const ModelConfig& c);

}  // namespace afd
