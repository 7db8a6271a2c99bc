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

RecurrentState::RecurrentState(Backend& backend, const ModelConfig& c, int numSlots, bool padSlot, const std::string* shareDir)
    : numSlots_(numSlots), padSlot_(padSlot ? numSlots : -1) {
  AFD_CHECK(numSlots >= 1 && numSlots <= 65536, "numStateSlots must be in [1, 65536], got " << numSlots);
  const GdnConfig& g = c.gdn;
  const int64_t rows = numSlots + (padSlot ? 1 : 0);
  const size_t convBytes = static_cast<size_t>(rows * convElems(g)) * sizeof(float);
  const size_t deltaBytes = static_cast<size_t>(rows * deltaElems(g)) * sizeof(float);
  size_t gdnLayers = 0;
  for (const LayerKinds& k : c.layers) gdnLayers += k.attention == AttentionKind::Gdn ? 1 : 0;
  if (shareDir && gdnLayers > 0) shared_ = backend.allocateShared(gdnLayers * (convBytes + deltaBytes), *shareDir);
  size_t offset = 0;  // bytes of shared_ carved so far
  // Storage of `bytes`: the next slice of the shared region (zeroed), or a buffer of its own.
  auto storage = [&](size_t bytes) -> void* {
    if (shared_) {
      void* p = static_cast<uint8_t*>(shared_->data()) + offset;
      offset += bytes;
      return p;
    }
    Buffer buf(&backend, bytes);
    backend.fillZero(buf.data(), buf.bytes());
    buffers_.push_back(std::move(buf));
    return buffers_.back().data();
  };
  const Device device = backend.device();
  conv_.resize(c.numLayers);
  delta_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].attention != AttentionKind::Gdn) continue;
    conv_[L] = Tensor(storage(convBytes), DType::F32, {rows, g.convDim(), g.convKernel - 1}, device);
    delta_[L] = Tensor(storage(deltaBytes), DType::F32, {rows, g.numValueHeads, g.keyHeadDim, g.valueHeadDim}, device);
  }
}

}  // namespace afd
