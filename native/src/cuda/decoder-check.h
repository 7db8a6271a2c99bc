// Greedy generation through the fused decoder on real checkpoint weights, one token per
// step (the prompt too), for checking the fused path against the engine.
#pragma once
#include <cstdint>
#include <vector>
#include <cstdint>

#include "model/model-config.h"

namespace afd::cuda {

struct DecoderRun {
  std::vector<int32_t> tokens;  // maxNewTokens generated ids
  std::vector<float> logits;    // [maxNewTokens, vocab]: the distribution that chose each token
};

DecoderRun runDecoderGreedy(const ModelLoadSpec& spec, const std::vector<int32_t>& prompt, int maxNewTokens,
                            bool useGraphs, int deviceIndex);

// A decode step of the fused decoder split into two stages (the AFD / DBO cut:
// enqueueAttentionHalf / enqueueFfnHalf per stage, FFN output added to the residual by
// the topK-1 combine, as cuda/nccl/afd-split-decoder does across GPUs) on one GPU,
// against the unsplit step, on synthetic weights of the config's shape and random KV.
struct SplitStageCheck {
  int rows = 0;
  int stageRows[2] = {0, 0};
  bool exactGemm = true;       // DecoderOptions::stageExactGemm
  int steps = 0;
  int mismatchedSteps = 0;     // steps whose tokens differ anywhere in the batch
  int mismatchedTokens = 0;
  int logitStepsBitEqual = 0;  // steps whose logits are identical bit for bit
  double maxLogitAbsDiff = 0;
};

SplitStageCheck runSplitStageCheck(const ModelConfig& config, int rows, bool exactGemm, int steps, int context,
                                   uint64_t seed, int deviceIndex);

}  // namespace afd::cuda
