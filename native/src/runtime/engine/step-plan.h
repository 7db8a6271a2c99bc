// C++ view of StepPlan / StepResult (shared/src/engine/step.ts). The plan points at host
// arrays owned by the caller (the binding keeps the JS typed arrays alive for the step).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace afd {

// Penalties, logit biases, log-probability counts and the allowed-token mask of a step
// (StepExtras in step.ts).
// Lists are CSR over the step's sequences: sequence s owns [offsets[s], offsets[s + 1]).
struct StepExtras {
  const float* presencePenalty = nullptr;    // [numSeqs]; 0 = off
  const float* frequencyPenalty = nullptr;   // [numSeqs]; 0 = off
  const float* repetitionPenalty = nullptr;  // [numSeqs]; 1 = off
  const int32_t* seenOffsets = nullptr;      // [numSeqs + 1]
  const int32_t* seenTokenIds = nullptr;     // [numSeen]
  const int32_t* seenCounts = nullptr;       // [numSeen] output occurrences; 0 = prompt only
  const int32_t* biasOffsets = nullptr;      // [numSeqs + 1]
  const int32_t* biasTokenIds = nullptr;     // [numBias]
  const float* biasValues = nullptr;         // [numBias]; -Infinity bans
  const int32_t* numLogprobs = nullptr;         // [numSeqs] -1 = none, else 0..20
  const int32_t* numPromptLogprobs = nullptr;   // [numSeqs] -1 = none, else 0..20
  const int32_t* nextPromptTokenIds = nullptr;  // [numSeqs] -1 = none
  // Penalty slots (both null: every sequence's seen list comes with the step): slot k >= 0
  // keeps sequence s's seen tokens in the backend's penalty table between steps, counted by
  // the sampler; seeds[s] = 1 clears the slot and writes s's seen list of this step into it
  // first, 0 reads the slot as the earlier steps left it (s's seen list must be empty).
  const int32_t* penaltySlots = nullptr;      // [numSeqs] -1 = none
  const uint8_t* penaltySlotSeeds = nullptr;  // [numSeqs] 0 / 1
  int numSeen = 0, numBias = 0;
  const int32_t* maskRows = nullptr;   // [numSeqs] row of the token mask, -1 = none; rows 0..M-1 each once
  const int32_t* tokenMask = nullptr;  // [M * ceil(vocabSize / 32)]; null while a row is used: deferred
  int64_t tokenMaskLength = 0;         // elements of tokenMask
};

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
  const float* minP = nullptr;            // [numSeqs]; 0 = off (null = off for all)
  // Models with gdn layers: the recurrent-state slot of each sequence (required there,
  // null otherwise). It holds s's state after its first positions[tokenOffsets[s]]
  // tokens; a step that starts s at position 0 starts from the zero state.
  const int32_t* stateSlots = nullptr;    // [numSeqs]
  const StepExtras* extras = nullptr;     // null: no sequence asks for penalties, biases or logprobs
  int stageSplit = 0;
  bool returnLogits = false;
  // A deferred token mask's ticket (Engine::reserveTokenMask, taken when the step was
  // submitted, so it pairs with the provideTokenMask calls in order); -1: the step takes one.
  int64_t tokenMaskTicket = -1;
};

// Mask rows of a plan (sequences with maskRows >= 0), and whether its mask is deferred
// (rows used, no tokenMask given).
int numMaskRows(const StepPlan& plan);
bool defersTokenMask(const StepPlan& plan);

// Rows of log-probabilities, CSR over the step's sequences (TokenLogprobs in step.ts).
struct TokenLogprobs {
  std::vector<int32_t> rowOffsets;  // [numSeqs + 1]
  int width = 1;                    // 1 + the step's largest k
  std::vector<int32_t> tokenIds;    // [rows * width]: the chosen token, then the top k; -1 pads
  std::vector<float> logprobs;      // [rows * width]; NaN pads
  std::vector<int32_t> ranks;       // [rows] 1-based rank of the chosen token
};

struct StepResult {
  std::vector<int32_t> tokenIds;  // [numSeqs]; -1 where nothing was sampled
  std::vector<float> logits;      // [numSampled * vocab] when requested (after bias and penalties)
  double stepTimeMs = 0;
  std::optional<TokenLogprobs> logprobs;        // when a sequence asks numLogprobs >= 0
  std::optional<TokenLogprobs> promptLogprobs;  // when a sequence asks numPromptLogprobs >= 0
};

// Throws afd::Error naming the first inconsistency (what, where, what to fix).
void validateStepPlan(const StepPlan& plan, int64_t vocabSize, int kvBlockSize, int numKvBlocks);
// The state slots of a plan against an engine with numStateSlots slots (0: the model has
// no gdn layer, and the plan must not name any): given exactly when the model keeps state,
// each in [0, numStateSlots), none twice.
void validateStateSlots(const StepPlan& plan, int numStateSlots);
// The extras' part of it (step-extras.cc); validateStepPlan calls it when extras are given.
void validateStepExtras(const StepExtras& x, int numSeqs, const uint8_t* sampleMask, int64_t vocabSize);
// Every row of a token mask (rows x ceil(vocabSize / 32) words) allows a token of the
// vocabulary (a row that allows none leaves nothing to sample); throws naming the row.
void checkMaskRowsAllowAToken(const int32_t* mask, int rows, int64_t vocabSize);

}  // namespace afd
