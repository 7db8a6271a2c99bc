// moe, moe+shared and moe+gated_shared FFN, for the layers of those kinds: a router picks
// numExpertsPerTok of the routed experts per token (softmax top-k, or grouped routing with
// config.routing; model/grouped-router.h), the chosen SiLU-gated experts run and combine
// with the routing weights; moe+shared adds the shared experts' MLP, which every token
// goes through; moe+gated_shared adds one shared expert scaled per token by
// sigmoid(shared_expert_gate . x) (Qwen3-Next). With the gate on attention the router runs there and what arrives is its
// logits (or, grouped, its dense routing weights).
#pragma once
#include <memory>
#include <vector>

#include "model/ffn-module.h"
#include "model/grouped-router.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

struct MoeLayerWeights {
  Tensor routerGate;                   // [E, H] when the gate runs on the FFN side
  Tensor routerBias;                   // [E] score correction bias (noaux_tc), with the gate
  std::vector<ExpertWeights> experts;  // [E]; only the held range is bound (expert parallelism)
  ExpertWeights shared;                // moe+shared: one MLP of I x numSharedExperts; moe+gated_shared: the shared expert; else empty
  Tensor sharedGate;                   // moe+gated_shared: [1, H]
};

class MoeFfn : public FfnModule {
 public:
  // experts: the routed experts to bind (expert parallelism: this FFN rank's range; the
  // others stay empty and must not be routed to here).
  MoeFfn(const ModelConfig& c, const WeightStore& store, Backend& backend, bool gateOnAttention, ExpertRange experts);

  void forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out) override;

  // Expert parallelism (ep/*.cc) routes and runs the experts itself: the layer's
  // routing as forward() does it (hidden [T, H] act; routerLogits [T, E] f32 or null;
  // logits [T, E] f32 scratch; expertIds / expertWeights [T, K] out), and its shared
  // experts (out [T, H] act; gated by sigmoid(shared_expert_gate . x) on moe+gated_shared).
  void route(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& logits, Tensor& expertIds,
             Tensor& expertWeights);
  bool hasSharedExperts(int layer) const { return !layers_[layer].shared.gate.empty(); }
  void sharedExperts(int layer, const Tensor& hidden, Tensor& out);
  const MoeLayerWeights& weights(int layer) const { return layers_[layer]; }

 private:
  void ensureScratch(int64_t tokens);
  // Grouped routing: routed experts plus the shared experts, summed in their combine.
  void moeGrouped(int layer, const Tensor& hidden, MoeArgs& a, Tensor& out);
  // The layer's shared experts' output in sharedOut_, or an empty tensor when it has none.
  Tensor shared(int layer, const Tensor& hidden);

  const ModelConfig& c_;
  Backend& backend_;
  bool gateOnAttention_;
  std::vector<MoeLayerWeights> layers_;  // [numLayers]; empty for dense layers
  int64_t scratchTokens_ = 0;
  Buffer logits_, expertIds_, expertWeights_;
  std::unique_ptr<GroupedRouter> router_;  // config.routing.grouped
  Buffer sharedOut_;                       // [T, H] act: the shared experts' output
  Buffer sharedGateLogits_;                // [T, 1] f32: moe+gated_shared's gate before the sigmoid
};

}  // namespace afd
