// RoPE inverse frequencies per HF rope_scaling type (default, linear, llama3, yarn).
#pragma once
#include <vector>

#include "model/model-config.h"

namespace afd {

// inv_freq: [rotaryDim / 2], computed like transformers' ROPE_INIT_FUNCTIONS (f32).
std::vector<float> ropeInvFreq(const ModelConfig& c);
// cos/sin multiplier (YaRN attention factor; 1 otherwise).
float ropeAttentionScale(const ModelConfig& c);

}  // namespace afd
