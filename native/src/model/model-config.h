// C++ mirror of ModelConfigSpec / ModelLoadSpec (native/src/modelSpec.ts). TypeScript
// validated and normalised everything; the binding converts the plain JS object.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/expert-placement.h"
#include "model/layer-kinds.h"
#include "model/layer-params.h"
#include "model/slots.h"

namespace afd {

enum class ModelRole { Colocated, Attention, Ffn };
ModelRole parseModelRole(const std::string& name);
const char* modelRoleName(ModelRole role);

struct RopeScaling {
  std::string type = "default";  // default | linear | llama3 | yarn | dynamic
  double factor = 1;
  double lowFreqFactor = 1;
  double highFreqFactor = 4;
  int64_t originalMaxPositionEmbeddings = 0;
  double betaFast = 32;
  double betaSlow = 1;
  double attentionFactor = 1;
};

// The model as TypeScript described it: sizes, each layer's kinds, and the
// hyper-parameters of the kinds. Nothing in C++ branches on the family.
struct ModelConfig {
  std::string arch;  // the family row's name, a label for messages and EngineInfo
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int numLayers = 0;
  int numHeads = 0;
  int numKvHeads = 0;
  int64_t headDim = 0;
  int64_t intermediateSize = 0;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000;
  RopeScaling ropeScaling;
  int64_t maxPositionEmbeddings = 0;
  bool tieWordEmbeddings = false;
  // RoPE rotates the first rotaryDim dims of each q/k head (rotate-half within them), the
  // rest pass through: headDim, or less with partial_rotary_factor (Qwen3-Next).
  int64_t rotaryDim = 0;
  // Every decoder RMSNorm (input, post-attention, final, q/k head norms) scales by
  // 1 + weight (Qwen3-Next): the weight store builds those f32 weights at load.
  bool normUnitOffset = false;
  // moe+gated_shared layers: the width of the one sigmoid-gated shared expert.
  int64_t gatedSharedIntermediateSize = 0;
  int numExperts = 0;
  int numExpertsPerTok = 0;
  int64_t moeIntermediateSize = 0;
  bool normTopkProb = false;
  std::vector<LayerKinds> layers;  // [numLayers] the modules each layer is built from
  std::vector<int32_t> eosTokenIds;
  int32_t bosTokenId = -1;  // -1 = none
  // The hyper-parameters of mla and gdn layers and of grouped routing with shared experts
  // (model/layer-params.h); off when no layer uses them.
  MlaConfig mla;
  GdnConfig gdn;
  MoeRoutingConfig routing;

  bool isMoeLayer(int layer) const { return layers[layer].moe(); }
  bool hasAttentionKind(AttentionKind kind) const;
  bool hasFfnKind(FfnKind kind) const;
};

// One tensor to map into a slot: a validated byte range inside one checkpoint file, or
// (file == kDummyFile) a dummy tensor generated on load: value = dummyOffset + dummyScale * (2u - 1).
constexpr int kDummyFile = -1;
struct TensorRef {
  SlotRef slot;
  std::string name;  // the checkpoint's name: for messages and the dummy seed, never interpreted
  int file = 0;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t byteLength = 0;
  float dummyScale = 0;
  float dummyOffset = 0;
};

struct ModelLoadSpec {
  ModelConfig config;
  ModelRole role = ModelRole::Colocated;
  bool computeGateOnAttention = false;
  // FFN role with expert parallelism: the routed experts this rank holds (the spec lists
  // only their tensors); nullopt = every expert.
  std::optional<ExpertRange> expertRange;
  std::vector<std::string> files;
  std::vector<TensorRef> tensors;
  uint64_t dummySeed = 0;  // seed of the dummy tensors (core/dummy-weights.h)
};

// Checks internal consistency (sizes, counts, ranges) so native never trusts a bad spec.
void validateModelConfig(const ModelConfig& c);

}  // namespace afd
