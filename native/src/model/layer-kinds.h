// What each decoder layer is built from: one attention module and one FFN module, picked
// by kind (C++ mirror of AttentionKind / FfnKind / LayerKinds in native/src/modelSpec.ts,
// where the family table decides them). Nothing here knows a model family.
#pragma once
#include <string>

namespace afd {

// gqa: q/k/v/o projections over a paged K/V cache (model/gqa-attention.h);
// mla: multi-head latent attention over a latent cache (model/mla-attention.h);
// gqa_gated: gqa whose output is scaled by sigmoid(a per-head gate q_proj also yields)
// before o_proj (Qwen3-Next; the same module and cache as gqa);
// gdn: Gated DeltaNet linear attention over a per-sequence recurrent state instead of a
// KV cache (Qwen3-Next / Qwen3.5; model/gdn-attention.h).
enum class AttentionKind { Gqa, Mla, GqaGated, Gdn };
// dense: SiLU-gated MLP (model/dense-ffn.h); moe: router + routed experts;
// moe+shared: the same plus shared experts; moe+gated_shared: moe plus one shared
// expert scaled per token by sigmoid(shared_expert_gate . x) (all model/moe-ffn.h).
enum class FfnKind { Dense, Moe, MoeShared, MoeGatedShared };

struct LayerKinds {
  AttentionKind attention = AttentionKind::Gqa;
  FfnKind ffn = FfnKind::Dense;

  // The FFN half routes tokens to experts.
  bool moe() const { return ffn != FfnKind::Dense; }
};

// "gqa" | "mla" | "gqa_gated" | "gdn"; throws naming the accepted kinds.
AttentionKind parseAttentionKind(const std::string& name);
// "dense" | "moe" | "moe+shared" | "moe+gated_shared"; throws naming the accepted kinds.
FfnKind parseFfnKind(const std::string& name);
const char* attentionKindName(AttentionKind kind);
const char* ffnKindName(FfnKind kind);

}  // namespace afd
