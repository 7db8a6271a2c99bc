// DeepSeek's grouped top-k router (softmax / sigmoid / given scores, greedy,
// group-limited greedy or noaux_tc with the score correction bias) and the scatter of the
// chosen experts into dense routing weights (what the attention role sends when the
// gate runs there). The math follows the CPU backend (cpu/moe-route.cc): scores, biased
// choices and group scores in f64, ties to the lower index.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// Up to this many experts per token (shared memory of the one-warp-per-token kernel).
constexpr int kGroupedRouteMaxExperts = 1024;

// Codes of afd::RouterScoring / afd::RouterTopkMethod (core/deepseek-ops.h), in order.
constexpr int kRouteScoringSoftmax = 0;
constexpr int kRouteScoringSigmoid = 1;
constexpr int kRouteScoringNone = 2;
constexpr int kRouteGreedy = 0;
constexpr int kRouteGroupLimitedGreedy = 1;
constexpr int kRouteNoauxTc = 2;

struct GroupedRouteArgs {
  const float* logits = nullptr;  // [rows, experts] f32
  const void* bias = nullptr;     // [experts] of biasDtype, or null
  int biasDtype = 0;
  int rows = 0;
  int experts = 0;     // <= kGroupedRouteMaxExperts
  int k = 1;           // 1 <= k <= experts
  int scoring = kRouteScoringSoftmax;
  int method = kRouteGreedy;
  int groups = 1;      // divides experts (grouped methods)
  int topkGroups = 1;  // 1 <= topkGroups <= groups; topkGroups * experts / groups >= k
  bool normTopk = false;
  float scale = 1.0f;
  int32_t* ids = nullptr;   // [rows, k]
  float* weights = nullptr; // [rows, k]
};

// The caller has checked the contract (cpu/deepseek-contracts.h); this checks the
// kernel's own limits and throws std::invalid_argument naming them.
void groupedRoute(const GroupedRouteArgs& args, cudaStream_t stream);

// dense[t, e] = weights[t, j] where ids[t, j] == e, else 0. ids, weights: [rows, k];
// dense: [rows, experts] f32. A row with an id outside [0, experts) becomes NaN (loud).
void scatterRouting(const int32_t* ids, const float* weights, float* dense, int rows, int k, int experts,
                    cudaStream_t stream);

}  // namespace afd::cuda
