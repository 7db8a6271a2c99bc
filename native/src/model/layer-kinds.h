// What each decoder layer is built from: one attention module and one FFN module, picked
// by kind (C++ mirror of AttentionKind / FfnKind / LayerKinds in native/src/modelSpec.ts,
// where the family table decides them). Nothing here knows a model family.
#pragma once
#include <string>

namespace afd {

// gqa: q/k/v/o projections over a paged K/V cache (model/gqa-attention.h);
// mla: multi-head latent attention over a latent cache (model/mla-attention.h).
enum class AttentionKind { Gqa, Mla };
// dense: SiLU-gated MLP (model/dense-ffn.h); moe: router + routed experts;
// moe+shared: the same plus shared experts (both model/moe-ffn.h).
enum class FfnKind { Dense, Moe, MoeShared };

struct LayerKinds {
  AttentionKind attention = AttentionKind::Gqa;
  FfnKind ffn = FfnKind::Dense;

  // The FFN half routes tokens to experts.
  bool moe() const { return ffn != FfnKind::Dense; }
};

// "gqa" | "mla"; throws naming the accepted kinds.
AttentionKind parseAttentionKind(const std::string& name);
// "dense" | "moe" | "moe+shared"; throws naming the accepted kinds.
FfnKind parseFfnKind(const std::string& name);
const char* attentionKindName(AttentionKind kind);
const char* ffnKindName(FfnKind kind);

}  // namespace afd
