// Greedy generation through the fused decoder on real checkpoint weights, one token per
// step (the prompt too), for checking the fused path against the engine.
#pragma once
#include <cstdint>
#include <vector>

#include "model/model-config.h"

namespace afd::cuda {

struct DecoderRun {
  std::vector<int32_t> tokens;  // maxNewTokens generated ids
  std::vector<float> logits;    // [maxNewTokens, vocab]: the distribution that chose each token
};

DecoderRun runDecoderGreedy(const ModelLoadSpec& spec, const std::vector<int32_t>& prompt, int maxNewTokens,
                            bool useGraphs, int deviceIndex);

}  // namespace afd::cuda
