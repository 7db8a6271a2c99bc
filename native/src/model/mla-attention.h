// MLA (multi-head latent attention), the attention of DeepSeek-V2/V3, as the middle of
// the attention half (between the input norm and the residual add):
//   q      = q_proj(x), or q_b_proj(rmsNorm(q_a_proj(x)))         [T, nH, N + R]
//   kvA    = kv_a_proj_with_mqa(x) = [latent | kpe]                 [T, L + R]
//   latent = rmsNorm(latent) (kv_a_layernorm); RoPE on q[..., N:] and kpe only
//   cache  <- kvA per token (the latent cache holds L + R values per token, no V)
//   attn   = MLA attention over the cache with kv_b_proj              [T, nH, V]
//   hidden += o_proj(attn)                                           [T, H] f32
// (L = kv_lora_rank, R = qk_rope_head_dim, N = qk_nope_head_dim, V = v_head_dim.)
// The q_a / kv_a layernorms use eps 1e-6 whatever rms_norm_eps says, as transformers'
// DeepseekV2/V3RMSNorm(rank) and DeepSeek's own code do.
#pragma once
#include <vector>

#include "core/backend.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct AttentionStageInputs;

struct MlaLayerWeights {
  Tensor qProj;             // [nH * (N + R), H] when qLoraRank is 0
  Tensor qA, qANorm, qB;    // [qLora, H], [qLora], [nH * (N + R), qLora] otherwise
  Tensor kvA, kvANorm, kvB;  // [L + R, H], [L], [nH * (N + V), L]
  Tensor o;                 // [H, nH * V]
};

class MlaAttention {
 public:
  static constexpr float kLoraNormEps = 1e-6f;

  // Maps every layer's MLA weights (names from the HF checkpoint, shapes from the config).
  MlaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend);

  // hidden += o_proj(MLA(normed)) for one layer and stage (normed: [T, H] act; hidden:
  // [T, H] f32); the stage's tokens are written into latentCache ([numBlocks, B, L + R])
  // before attention reads it.
  void forward(int layer, const AttentionStageInputs& in, const Tensor& normed, const RopeParams& rope,
               Tensor& latentCache, Tensor& hidden);

 private:
  void reserve(int64_t tokens);

  const ModelConfig& c_;
  Backend& backend_;
  std::vector<MlaLayerWeights> layers_;
  int64_t tokens_ = 0;
  Buffer q_, qA_, kvA_, attn_;  // scratch, grown to the largest stage seen
};

}  // namespace afd
