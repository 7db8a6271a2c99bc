// MoE routing (fused softmax + top-k + renormalisation), the token permutation to
// experts, and the weighted un-permute (fused with the residual add and the next RMSNorm
// on the decode path).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// logits: [rows, numExperts] f32 -> topkIds [rows, topK] i32 (descending weight, ties to
// the lower id), topkWeights [rows, topK] f32 (softmax probs, renormalised when asked).
void moeTopK(const float* logits, int rows, int numExperts, int topK, bool normTopkProb, int32_t* topkIds,
             float* topkWeights, cudaStream_t stream);

struct MoePermutation {
  int32_t* expertOffsets = nullptr;    // [numExperts + 1] row ranges of the permuted order
  int32_t* activeExperts = nullptr;    // [gridSlots] experts with rows, ascending; -1 after
  int32_t* sortedSourceRow = nullptr;  // [rows * topK] token row of each permuted row
  int32_t* pairPosition = nullptr;     // [rows, topK] permuted row of each (token, k) pair
  int32_t* activeCount = nullptr;      // optional [1]: experts with rows (for bandwidth accounting)
};

// Slots a grouped GEMM needs for `rows` tokens.
inline int moeGridSlots(int rows, int numExperts, int topK) {
  const int pairs = rows * topK;
  return pairs < numExperts ? pairs : numExperts;
}

// Groups the (token, k) pairs by expert. gridSlots >= moeGridSlots(rows, ...).
void moePermute(const int32_t* topkIds, int rows, int numExperts, int topK, int gridSlots, const MoePermutation& out,
                cudaStream_t stream);

// Decode path: moeTopK and moePermute in one single-block launch (small row counts).
void moeRoute(const float* logits, int rows, int numExperts, int topK, bool normTopkProb, int32_t* topkIds,
              float* topkWeights, int gridSlots, const MoePermutation& out, cudaStream_t stream);

// Decode path for at most kRouterFusedMaxRows rows: the router GEMV and moeRoute in one
// launch (one warp per expert; the last block to finish runs top-k and the permutation).
constexpr int kRouterFusedMaxRows = 8;
struct MoeRouterRouteArgs {
  const void* x = nullptr;          // [rows, hidden] bf16 (16-byte aligned rows)
  const void* w = nullptr;          // [numExperts, hidden] bf16 router (gate) weight
  float* logits = nullptr;          // [rows, numExperts] f32, written
  int rows = 0;
  int hidden = 0;
  int numExperts = 0;
  int topK = 0;
  bool normTopkProb = false;
  int32_t* topkIds = nullptr;       // [rows, topK]
  float* topkWeights = nullptr;     // [rows, topK]
  int gridSlots = 0;                // >= moeGridSlots(rows, numExperts, topK)
  MoePermutation perm;
  int32_t* doneCounter = nullptr;   // [1], zero before first use; left zero
};
bool moeRouterRouteSupported(int rows, int hidden, int numExperts, int topK);
void moeRouterRoute(const MoeRouterRouteArgs& args, cudaStream_t stream);

struct MoeCombineArgs {
  const float* expertOut = nullptr;       // [rows * topK, hidden] f32, permuted order
  const int32_t* pairPosition = nullptr;  // [rows, topK]
  const float* topkWeights = nullptr;     // [rows, topK]
  void* out = nullptr;                    // [rows, hidden]: = or += sum_k w * expertOut (+ addend)
  const void* addend = nullptr;           // [rows, hidden] of out's dtype, or null (shared experts)
  bool outIsBf16 = false;                 // bf16 out (no accumulate, no norm); else f32
  bool accumulate = false;
  const void* normWeight = nullptr;  // [hidden] or null: then also normOut = RMSNorm(out)
  int normDtype = 2;
  void* normOut = nullptr;  // [rows, hidden] bf16
  int rows = 0;
  int hidden = 0;
  int topK = 0;
  float eps = 1e-6f;
};

void moeCombine(const MoeCombineArgs& args, cudaStream_t stream);

}  // namespace afd::cuda
