#include "model/model-config.h"

#include "core/enum-names.h"

namespace afd {

namespace {
constexpr EnumName<ModelRole> kModelRoles[] = {{ModelRole::Colocated, "colocated"}, {ModelRole::Attention, "attention"}, {ModelRole::Ffn, "ffn"}};
}  // namespace

ModelRole parseModelRole(const std::string& name) {
  if (const auto role = enumOfName(kModelRoles, name)) return *role;
  AFD_FAIL("unknown model role \"" << name << "\" (expected colocated, attention or ffn)");
}

const char* modelRoleName(ModelRole role) { return nameOfEnum(kModelRoles, role); }

bool ModelConfig::hasAttentionKind(AttentionKind kind) const {
  for (const LayerKinds& k : layers)
    if (k.attention == kind) return true;
  return false;
}

bool ModelConfig::hasFfnKind(FfnKind kind) const {
  for (const LayerKinds& k : layers)
    if (k.ffn == kind) return true;
  return false;
}

void validateModelConfig(const ModelConfig& c) {
  AFD_CHECK(c.vocabSize > 0 && c.hiddenSize > 0 && c.numLayers > 0, "model config: vocabSize, hiddenSize and numLayers must be positive");
  AFD_CHECK(c.numHeads > 0 && c.numKvHeads > 0 && c.numHeads % c.numKvHeads == 0,
            "model config: numHeads (" << c.numHeads << ") must be a positive multiple of numKvHeads (" << c.numKvHeads << ")");
  AFD_CHECK(c.headDim > 0 && c.headDim % 2 == 0, "model config: headDim " << c.headDim << " must be positive and even (RoPE)");
  AFD_CHECK(static_cast<int>(c.layers.size()) == c.numLayers,
            "model config: layers has " << c.layers.size() << " entries for " << c.numLayers << " layers");
  // One paged attention kind for every layer that has a KV cache (gdn layers keep a
  // recurrent state instead): the cache has one row layout (runtime/kv-cache.h).
  const LayerKinds* paged = nullptr;
  for (const LayerKinds& k : c.layers) {
    if (k.attention == AttentionKind::Gdn) continue;
    if (paged == nullptr) paged = &k;
    AFD_CHECK(k.attention == paged->attention,
              "model config: layers mix " << attentionKindName(paged->attention) << " and " << attentionKindName(k.attention)
                                          << " attention; the KV cache holds one kind");
  }
  AFD_CHECK(paged != nullptr, "model config: every layer is gdn; the engine needs at least one layer with a KV cache");
  AFD_CHECK(c.rotaryDim > 0 && c.rotaryDim <= c.headDim && c.rotaryDim % 2 == 0,
            "model config: rotaryDim " << c.rotaryDim << " must be even and in (0, headDim " << c.headDim << "]");
  if (c.hasFfnKind(FfnKind::Moe) || c.hasFfnKind(FfnKind::MoeShared) || c.hasFfnKind(FfnKind::MoeGatedShared)) {
    AFD_CHECK(c.numExperts > 0 && c.numExpertsPerTok > 0 && c.numExpertsPerTok <= c.numExperts,
              "model config: MoE layers need 0 < numExpertsPerTok (" << c.numExpertsPerTok << ") <= numExperts (" << c.numExperts << ")");
    AFD_CHECK(c.moeIntermediateSize > 0, "model config: moeIntermediateSize must be positive for MoE layers");
  }
  if (c.hasFfnKind(FfnKind::Dense)) AFD_CHECK(c.intermediateSize > 0, "model config: intermediateSize must be positive for dense layers");
  AFD_CHECK(c.rmsNormEps > 0, "model config: rmsNormEps must be positive");
  AFD_CHECK(c.ropeTheta > 0, "model config: ropeTheta must be positive");
  validateLayerParams(c);
}

}  // namespace afd
