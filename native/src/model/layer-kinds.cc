#include "model/layer-kinds.h"

#include "core/enum-names.h"
#include "core/error.h"

namespace afd {

namespace {
constexpr EnumName<AttentionKind> kAttentionKinds[] = {{AttentionKind::Gqa, "gqa"}, {AttentionKind::Mla, "mla"},
                                                         {AttentionKind::GqaGated, "gqa_gated"}, {AttentionKind::Gdn, "gdn"}};
constexpr EnumName<FfnKind> kFfnKinds[] = {{FfnKind::Dense, "dense"}, {FfnKind::Moe, "moe"}, {FfnKind::MoeShared, "moe+shared"},
                                                {FfnKind::MoeGatedShared, "moe+gated_shared"}};
}  // namespace

AttentionKind parseAttentionKind(const std::string& name) {
  if (const auto kind = enumOfName(kAttentionKinds, name)) return *kind;
  AFD_FAIL("unknown attention kind \"" << name << "\" (this engine builds gqa, mla, gqa_gated and gdn layers)");
}

FfnKind parseFfnKind(const std::string& name) {
  if (const auto kind = enumOfName(kFfnKinds, name)) return *kind;
  AFD_FAIL("unknown FFN kind \"" << name << "\" (this engine builds dense, moe, moe+shared and moe+gated_shared layers)");
}

const char* attentionKindName(AttentionKind kind) { return nameOfEnum(kAttentionKinds, kind); }

const char* ffnKindName(FfnKind kind) { return nameOfEnum(kFfnKinds, kind); }

}  // namespace afd
