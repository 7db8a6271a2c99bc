#include "runtime/engine/recurrent-state.h"

namespace afd {

namespace {

int64_t convElems(const GdnConfig& g) { return g.convDim() * (g.convKernel - 1); }
int64_t deltaElems(const GdnConfig& g) { return g.numValueHeads * g.keyHeadDim * g.valueHeadDim; }

}  // namespace

uint64_t recurrentStateBytesPerSlot(const ModelConfig& c) {
  uint64_t layers = 0;
  for (const LayerKinds& k : c.layers) layers += k.attention == AttentionKind::Gdn ? 1 : 0;
  return layers * static_cast<uint64_t>(convElems(c.gdn) + deltaElems(c.gdn)) * sizeof(float);
}

RecurrentState::RecurrentState(Backend& backend, const ModelConfig& c, int numSlots, bool padSlot)
    : numSlots_(numSlots), padSlot_(padSlot ? numSlots : -1) {
  AFD_CHECK(numSlots >= 1 && numSlots <= 65536, "numStateSlots must be in [1, 65536], got " << numSlots);
  const GdnConfig& g = c.gdn;
  const int64_t rows = numSlots + (padSlot ? 1 : 0);
  conv_.resize(c.numLayers);
  delta_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].attention != AttentionKind::Gdn) continue;
    Buffer conv(&backend, static_cast<size_t>(rows * convElems(g)) * sizeof(float));
    Buffer delta(&backend, static_cast<size_t>(rows * deltaElems(g)) * sizeof(float));
    backend.fillZero(conv.data(), conv.bytes());
    backend.fillZero(delta.data(), delta.bytes());
    conv_[L] = conv.view(DType::F32, {rows, g.convDim(), g.convKernel - 1});
    delta_[L] = delta.view(DType::F32, {rows, g.numValueHeads, g.keyHeadDim, g.valueHeadDim});
    buffers_.push_back(std::move(conv));
    buffers_.push_back(std::move(delta));
  }
}

}  // namespace afd
