// Gated DeltaNet linear attention (Qwen3-Next / Qwen3.5), for the layers of kind gdn. Its
// "cache" is a per-sequence recurrent state in the engine's state slots
// (runtime/engine/recurrent-state.h), not paged KV: the conv state [slots, C, W - 1] and the
// delta-rule state [slots, Hv, Dk, Dv], both f32. Per stage, x = the input-normed hidden:
//   proj   = x @ [q | k | v | z | b | a]                          [T, C + V + 2 Hv] f32
//   mixed  = SiLU(causal depthwise conv of proj's q|k|v columns)   [T, C], C = 2 K + V
//   g, beta = -exp(A_log) softplus(a + dt_bias), sigmoid(b)        [T, Hv]
//   core   = gated delta rule(q, k, v, g, beta) over the state     [T, Hv, Dv]
//   core   = RMSNormGated(core, z) per value head (plain weight)
//   hidden += out_proj(core)                                       [T, H] f32
// The fused projection's rows are regrouped at load (gdnFusedTensors) from the grouped
// in_proj_qkvz / in_proj_ba (per key head [q | k | v | z], [b | a]) or the split
// in_proj_qkv / z / b / a, so one GEMM yields every input and splitColumns separates them.
#pragma once
#include <vector>

#include "model/attention-module.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct GdnLayerWeights {
  Tensor inProj;     // [C + V + 2 Hv, H]
  Tensor conv;       // [C, W]
  Tensor aLog, dtBias;  // [Hv]
  Tensor norm;       // [Dv]
  Tensor out;        // [H, V]
};

class GdnAttention : public AttentionModule {
 public:
  GdnAttention(const ModelConfig& c, const WeightStore& store, Backend& backend);

  // convState, deltaState: the layer's state tensors (in the kCache / vCache places).
  void forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& convState,
               Tensor& deltaState) override;

 private:
  // Grows the scratch to T tokens (only on growth: a warmed graph step allocates nothing).
  void reserve(int64_t T);

  const ModelConfig& c_;
  Backend& backend_;
  std::vector<GdnLayerWeights> layers_;  // [numLayers]; empty for layers of another kind
  Buffer scratch_;
  int64_t scratchTokens_ = 0;
};

// The input projection of every gdn layer, fused with its rows in the order [q | k | v | z | b | a].
std::vector<FusedTensor> gdnFusedTensors(const ModelConfig& c);

}  // namespace afd
