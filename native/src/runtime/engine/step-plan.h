// C++ view of StepPlan / StepResult (shared/src/engine/step.ts). The plan points at host
// arrays owned by the caller (the binding keeps the JS typed arrays alive for the step).
#pragma once
#include <cstdint>
#include <vector>

namespace afd {

struct StepPlan {
  int numSeqs = 0;
  int numTokens = 0;
  const int32_t* tokenIds = nullptr;      // [numTokens]
  const int32_t* positions = nullptr;     // [numTokens]
  const int32_t* tokenOffsets = nullptr;  // [numSeqs + 1]
  const int32_t* contextLens = nullptr;   // [numSeqs]
  int maxBlocksPerSeq = 0;
  const int32_t* blockTables = nullptr;   // [numSeqs * maxBlocksPerSeq]
  const uint8_t* sampleMask = nullptr;    // [numSeqs]
  const float* temperature = nullptr;     // [numSeqs]
  const int32_t* topK = nullptr;          // [numSeqs]
  const float* topP = nullptr;            // [numSeqs]
  const uint32_t* seeds = nullptr;        // [numSeqs]
  int stageSplit = 0;
  bool returnLogits = false;
};

struct StepResult {
  std::vector<int32_t> tokenIds;  // [numSeqs]; -1 where nothing was sampled
  std::vector<float> logits;      // [numSampled * vocab] when requested
  double stepTimeMs = 0;
};

// Throws afd::Error naming the first inconsistency (what, where, what to fix).
void validateStepPlan(const StepPlan& plan, int64_t vocabSize, int kvBlockSize, int numKvBlocks);

}  // namespace afd
