// Parameter types of the DeepSeek-V2/V3 Backend ops (MLA attention over a latent KV
// cache, grouped top-k routing); the ops themselves are declared in core/backend.h.
#pragma once
#include <string>

namespace afd {

// How router logits become expert scores.
enum class RouterScoring {
  Softmax,  // DeepSeek-V2 (and every softmax top-k router)
  Sigmoid,  // DeepSeek-V3
  None,     // the logits already are the routing weights (dense weights sent by the attention role)
};

// Which experts may be chosen.
enum class RouterTopkMethod {
  Greedy,              // the k best scores
  GroupLimitedGreedy,  // DeepSeek-V2: keep the topkGroups groups with the highest max score
  NoauxTc,             // DeepSeek-V3: choose on score + bias; keep the groups with the highest top-2 sum
};

RouterScoring parseRouterScoring(const std::string& name);      // "softmax" | "sigmoid"
RouterTopkMethod parseRouterTopkMethod(const std::string& name);  // "greedy" | "group_limited_greedy" | "noaux_tc"
const char* routerTopkMethodName(RouterTopkMethod m);

struct MoeRoutingParams {
  int k = 1;                    // experts per token
  RouterScoring scoring = RouterScoring::Softmax;
  RouterTopkMethod method = RouterTopkMethod::Greedy;
  int numGroups = 1;            // n_group: experts split into equal contiguous groups
  int topkGroups = 1;           // topk_group: groups a token may choose from
  bool normTopk = false;        // renormalise the chosen weights to sum to 1
  float scale = 1;              // routed_scaling_factor, applied last
};

}  // namespace afd
