#include "model/layer-kinds.h"

#include "core/error.h"

namespace afd {

AttentionKind parseAttentionKind(const std::string& name) {
  if (name == "gqa") return AttentionKind::Gqa;
  if (name == "mla") return AttentionKind::Mla;
  AFD_FAIL("unknown attention kind \"" << name << "\" (this engine builds gqa and mla layers)");
}

FfnKind parseFfnKind(const std::string& name) {
  if (name == "dense") return FfnKind::Dense;
  if (name == "moe") return FfnKind::Moe;
  if (name == "moe+shared") return FfnKind::MoeShared;
  AFD_FAIL("unknown FFN kind \"" << name << "\" (this engine builds dense, moe and moe+shared layers)");
}

const char* attentionKindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::Gqa: return "gqa";
    case AttentionKind::Mla: return "mla";
  }
  return "?";
}

const char* ffnKindName(FfnKind kind) {
  switch (kind) {
    case FfnKind::Dense: return "dense";
    case FfnKind::Moe: return "moe";
    case FfnKind::MoeShared: return "moe+shared";
  }
  return "?";
}

}  // namespace afd
