// mla attention (multi-head latent attention, DeepSeek-V2/V3's), for the layers of kind
// mla (slot names of model/slots.h):
//   q      = q_proj(x), or q_b_proj(rmsNorm(q_a_proj(x)))         [T, nH, N + R]
//   kvA    = kv_a_proj(x) = [latent | kpe]                          [T, L + R]
//   latent = rmsNorm(latent) (kv_a_norm); RoPE on q[..., N:] and kpe only
//   cache  <- kvA per token (the latent cache holds L + R values per token, no V)
//   attn   = MLA attention over the cache with kv_b_proj              [T, nH, V]
//   hidden += o_proj(attn)                                           [T, H] f32
// (L = kv_lora_rank, R = qk_rope_head_dim, N = qk_nope_head_dim, V = v_head_dim.)
// The q_a / kv_a norms use eps 1e-6 whatever rms_norm_eps says, as transformers'
// DeepseekV2/V3RMSNorm(rank) and DeepSeek's own code do.
#pragma once
#include <vector>

#include "core/backend.h"
#include "model/attention-module.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct MlaLayerWeights {
  Tensor qProj;             // [nH * (N + R), H] when qLoraRank is 0
  Tensor qA, qANorm, qB;    // [qLora, H], [qLora], [nH * (N + R), qLora] otherwise
  Tensor kvA, kvANorm, kvB;  // [L + R, H], [L], [nH * (N + V), L]
  Tensor o;                 // [H, nH * V]
};

class MlaAttention : public AttentionModule {
 public:
  static constexpr float kLoraNormEps = 1e-6f;

  // Binds the slots of every mla layer (shapes from config.mla); rope outlives the module.
  MlaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend, const RopeParams& rope);

  // kCache is the layer's latent cache ([numBlocks, B, L + R]); vCache is empty.
  void forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache, Tensor& vCache) override;

 private:
  void reserve(int64_t tokens);

  const ModelConfig& c_;
  Backend& backend_;
  const RopeParams& rope_;
  std::vector<MlaLayerWeights> layers_;  // [numLayers]; empty for layers of another kind
  int64_t tokens_ = 0;
  Buffer q_, qA_, kvA_, attn_;  // scratch, grown to the largest stage seen
};

}  // namespace afd
