// (1 + weight) RMSNorm (Qwen3-Next, Qwen3.5): the checkpoint stores zero-centred norm
// weights and HF scales by 1 + weight in f32. The weight store builds those f32 weights
// once at load, so every norm op (and every backend) runs them as plain weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model-config.h"

namespace afd {

// The slots whose weights are stored zero-centred when config.normUnitOffset: the input,
// post-attention and final norms and the q/k head norms (not the gdn gated norm).
bool isUnitOffsetNormSlot(const std::string& slot);

// 1 + w in f32 for one norm tensor: w read from `mapped` (its bytes in the checkpoint
// mapping) or, for a dummy tensor (mapped null), generated as the backend would store it
// (the dummy value rounded to the tensor's dtype).
std::vector<float> unitOffsetNormValues(const TensorRef& ref, const uint8_t* mapped, uint64_t dummySeed);

}  // namespace afd
