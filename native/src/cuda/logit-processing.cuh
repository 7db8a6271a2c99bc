// Allowed-token mask, logit bias and penalties on the GPU, in place, before sampling
// (the rule of core/logit-ops.h, LogitProcessing), in one kernel: per row, blocks set
// the tokens its mask row bans to -inf (a dense pass split over the vocabulary), and the
// row's first block adds its biases, then applies the repetition, frequency and presence
// penalties to its seen tokens, skipping banned ones. The ids of a row's list are
// distinct, so the entries run in parallel; no element is written by both passes.
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
  const int32_t* maskRow = nullptr;      // [rows] mask row of each logits row, -1 = none; null = no masks
  const int32_t* mask = nullptr;         // [numMaskRows * maskWords] bitmask rows
  int maskWords = 0;                     // ceil(vocab / 32)
  // Rows with a penalty slot read their seen tokens from the table (core/logit-ops.h):
  const int32_t* penaltySlot = nullptr;   // [rows] slot, -1 = the lists; null = no row has one
  const int32_t* penaltyTable = nullptr;  // [slots, vocab]
};

void processLogitRows(const LogitProcessingArgs& args, cudaStream_t stream);

}  // namespace afd::cuda
