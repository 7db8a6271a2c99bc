// The per-sequence recurrent state of the gdn layers (model/gdn-attention.h), beside the
// paged KV cache of the other layers: per gdn layer a conv state [slots, C, W - 1] and a
// delta-rule state [slots, Hv, Dk, Dv], both f32. Slot ids come from the step plan
// (StepPlan::stateSlots: the scheduler hands out one per running sequence); the store never
// picks one. With CUDA graphs one more slot (padSlot) takes the pad rows of a padded step.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "model/model-config.h"

namespace afd {

class RecurrentState {
 public:
  // numSlots usable slots (+ 1 pad slot when padSlot); zeroed. With shareDir every tensor
  // lives in one SharedRegion (a CPU backend's file in *shareDir), in the transfer layout's
  // order: conv then delta of each gdn layer, each [numSlots (+ 1), ...].
  RecurrentState(Backend& backend, const ModelConfig& c, int numSlots, bool padSlot, const std::string* shareDir = nullptr);

  Tensor& conv(int layer) { return conv_[layer]; }
  Tensor& delta(int layer) { return delta_[layer]; }
  int numLayers() const { return static_cast<int>(conv_.size()); }
  int numSlots() const { return numSlots_; }
  int padSlot() const { return padSlot_; }  // -1 without one
  // Rows of each tensor: the slots and the pad slot.
  int numRows() const { return numSlots_ + (padSlot_ >= 0 ? 1 : 0); }
  // The region holding every tensor; null unless built with shareDir.
  const SharedRegion* sharedRegion() const { return shared_.get(); }

 private:
  int numSlots_, padSlot_;
  std::vector<Buffer> buffers_;
  std::unique_ptr<SharedRegion> shared_;
  std::vector<Tensor> conv_, delta_;  // [numLayers]; empty for layers of another kind
};

// Bytes of one slot over every gdn layer (0 when the model has none).
uint64_t recurrentStateBytesPerSlot(const ModelConfig& c);

}  // namespace afd
