// Host-side descriptions of the logit work between the LM head and the sampled token
// (shared/src/engine/step.ts, StepExtras): what Backend::processLogits, Backend::sample
// and Backend::logprobs read. The pipeline of one sampled row, on every backend:
//   logits -> + logit bias (-inf bans) -> repetition penalty -> frequency and presence
//   penalties (processLogits, in place) -> / temperature -> top-k, top-p, min-p ->
//   the sampled token (sample); the log-probabilities are the log-softmax of the
//   processed row / temperature (0 counts as 1), before the filters (logprobs).
#pragma once
#include <cstdint>

namespace afd {

// Most top log-probabilities a row may ask for (MAX_TOP_LOGPROBS in step.ts).
constexpr int kMaxTopLogprobs = 20;

// Allowed-token mask, logit bias and penalties of S rows, applied in place to logits
// [S, V] by processLogits. Lists are CSR over the rows: row r owns entries [offsets[r],
// offsets[r + 1]); the ids of one row's list are distinct (the plan check refuses
// repeats), so a backend may apply a row's entries in parallel. Per row r:
//   with a mask row (maskRow[r] >= 0): l[t] = -Infinity for every token t it does not allow,
//   and the entries below skip those tokens (so the dense mask pass and the sparse
//   entries never touch one element: a backend may run them in parallel);
//   l[id] += biasValues[e]                          for each bias entry e of r,
//   then for each seen entry e of r (id, count = seenCounts[e]):
//   l[id] = l[id] > 0 ? l[id] / repetition[r] : l[id] * repetition[r]
//   l[id] -= frequency[r] * count;  l[id] -= count > 0 ? presence[r] : 0.
// A row with a penalty slot (penaltySlot[r] = k >= 0) reads its seen tokens from the
// backend's penalty table instead of the lists (its seen list is empty): every token t with
// entry e = table[k][t] > 0 is a seen entry with count e - 1 (PenaltySlots below).
// Mask rows are xgrammar's bitmask layout: token t is allowed when bit (t % 32) of word
// floor(t / 32) of the row is set; a row has maskWords = ceil(V / 32) words.
struct LogitProcessing {
  const float* presence = nullptr;       // [S]; 0 = off
  const float* frequency = nullptr;      // [S]; 0 = off
  const float* repetition = nullptr;     // [S]; > 0, 1 = off
  const int32_t* seenOffsets = nullptr;  // [S + 1]
  const int32_t* seenIds = nullptr;      // tokens seen in the prompt or the output
  const int32_t* seenCounts = nullptr;   // their output occurrences (0 = prompt only)
  const int32_t* biasOffsets = nullptr;  // [S + 1]
  const int32_t* biasIds = nullptr;
  const float* biasValues = nullptr;     // additive; -Infinity bans the token
  const int32_t* penaltySlot = nullptr;  // [S] slot of the penalty table, -1 = the lists; null = none
  // Allowed-token masks: null maskRow = no row has one (nothing to do, nothing read).
  const int32_t* maskRow = nullptr;      // [S] row of `mask` for logits row r; -1 = none
  const int32_t* mask = nullptr;         // [numMaskRows * maskWords] host
  int numMaskRows = 0;
  int maskWords = 0;                     // ceil(V / 32)
};

// The penalty table: what a sequence has seen, kept by the backend between steps so the
// host does not send a sequence's seen list every step (StepExtras.penaltySlots). Slot k
// is a row of V int32 over the vocabulary: 0 = token never seen, 1 + c = seen, c times in
// the output (1: in the prompt only). seedPenaltySlots clears the listed slots and writes
// their lists (count c -> 1 + c); sample() adds 1 to the sampled token of every row with a
// slot (SamplingBatch.penaltySlot), so the counts follow the output without the host.
struct PenaltySeeds {
  int numSlots = 0;
  const int32_t* slots = nullptr;    // [numSlots] distinct slot ids, each < kMaxPenaltySlots
  const int32_t* offsets = nullptr;  // [numSlots + 1] CSR of the entries
  const int32_t* ids = nullptr;      // seen tokens (distinct per slot)
  const int32_t* counts = nullptr;   // their output occurrences (0 = prompt only)
};
// Most slots of one engine (the scheduler uses one per running sequence with a penalty).
constexpr int kMaxPenaltySlots = 1 << 16;
// A slot entry after the token is drawn once more (0 -> 2: first seen in the output).
constexpr int32_t penaltyEntryAfterSample(int32_t e) { return (e > 0 ? e : 1) + 1; }

// Words of one allowed-token mask row over a vocabulary of V tokens.
constexpr int64_t maskWordsOf(int64_t V) { return (V + 31) / 32; }
// Token t is allowed by a mask row.
inline bool maskAllows(const int32_t* row, int64_t t) {
  return ((static_cast<uint32_t>(row[t >> 5]) >> (t & 31)) & 1u) != 0;
}

// Log-probability rows over a logits tensor [S, V] f32. Output row j reads logits row
// rows[j] and holds, in `width` entries: the chosen token, then the topK[j] most likely
// tokens (value descending, lower id first on ties), padded with id -1 and NaN; its rank
// is 1 + the number of tokens whose log-probability is strictly larger than the chosen
// one's. Values: log-softmax of the row / temperature (temperature 0 counts as 1).
struct LogprobRequest {
  int numRows = 0;
  int width = 1;                       // 1 + the largest topK of the step
  const int32_t* rows = nullptr;       // [numRows] the logits row of each output row; null = row j
  const int32_t* topK = nullptr;       // [numRows] in [0, kMaxTopLogprobs]
  const int32_t* targets = nullptr;    // [numRows] chosen token ids; null inside sample(): the row's sampled token
  const float* temperature = nullptr;  // [numRows]; null = 1 for every row (raw logits)
};

// Where a LogprobRequest's rows go (host).
struct LogprobRows {
  int32_t* tokenIds = nullptr;  // [numRows * width]
  float* logprobs = nullptr;    // [numRows * width]
  int32_t* ranks = nullptr;     // [numRows]
};

}  // namespace afd
