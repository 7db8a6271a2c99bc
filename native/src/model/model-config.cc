#include "model/model-config.h"

namespace afd {

ModelRole parseModelRole(const std::string& name) {
  if (name == "colocated") return ModelRole::Colocated;
  if (name == "attention") return ModelRole::Attention;
  if (name == "ffn") return ModelRole::Ffn;
  AFD_FAIL("unknown model role \"" << name << "\" (expected colocated, attention or ffn)");
}

const char* modelRoleName(ModelRole role) {
  switch (role) {
    case ModelRole::Colocated: return "colocated";
    case ModelRole::Attention: return "attention";
    case ModelRole::Ffn: return "ffn";
  }
  return "?";
}

void validateModelConfig(const ModelConfig& c) {
  AFD_CHECK(c.vocabSize > 0 && c.hiddenSize > 0 && c.numLayers > 0, "model config: vocabSize, hiddenSize and numLayers must be positive");
  AFD_CHECK(c.numHeads > 0 && c.numKvHeads > 0 && c.numHeads % c.numKvHeads == 0,
            "model config: numHeads (" << c.numHeads << ") must be a positive multiple of numKvHeads (" << c.numKvHeads << ")");
  AFD_CHECK(c.headDim > 0 && c.headDim % 2 == 0, "model config: headDim " << c.headDim << " must be positive and even (RoPE)");
  AFD_CHECK(static_cast<int>(c.moeLayers.size()) == c.numLayers,
            "model config: moeLayers has " << c.moeLayers.size() << " entries for " << c.numLayers << " layers");
  bool anyMoe = false;
  for (bool m : c.moeLayers) anyMoe = anyMoe || m;
  if (anyMoe) {
    AFD_CHECK(c.numExperts > 0 && c.numExpertsPerTok > 0 && c.numExpertsPerTok <= c.numExperts,
              "model config: MoE layers need 0 < numExpertsPerTok (" << c.numExpertsPerTok << ") <= numExperts (" << c.numExperts << ")");
    AFD_CHECK(c.moeIntermediateSize > 0, "model config: moeIntermediateSize must be positive for MoE layers");
  }
  bool anyDense = false;
  for (bool m : c.moeLayers) anyDense = anyDense || !m;
  if (anyDense) AFD_CHECK(c.intermediateSize > 0, "model config: intermediateSize must be positive for dense layers");
  AFD_CHECK(c.rmsNormEps > 0, "model config: rmsNormEps must be positive");
  AFD_CHECK(c.ropeTheta > 0, "model config: ropeTheta must be positive");
  validateDeepseekConfig(c);
}

}  // namespace afd
