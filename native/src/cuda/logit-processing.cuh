// Logit bias and penalties on the GPU, in place, before sampling (the rule of
// core/logit-ops.h, LogitProcessing): one block per row adds the row's biases, then
// applies the repetition, frequency and presence penalties to its seen tokens. The ids
// of a row's list are distinct, so the entries run in parallel.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

struct LogitProcessingArgs {
  float* logits = nullptr;               // [rows, vocab] f32, in place
  int vocab = 0;
  int rows = 0;
  const float* presence = nullptr;       // [rows]
  const float* frequency = nullptr;      // [rows]
  const float* repetition = nullptr;     // [rows]
  const int32_t* seenOffsets = nullptr;  // [rows + 1]
  const int32_t* seenIds = nullptr;
  const int32_t* seenCounts = nullptr;
  const int32_t* biasOffsets = nullptr;  // [rows + 1]
  const int32_t* biasIds = nullptr;
  const float* biasValues = nullptr;
};

void processLogitRows(const LogitProcessingArgs& args, cudaStream_t stream);

}  // namespace afd::cuda
