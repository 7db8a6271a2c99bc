// The FFN half of the model, built for the ffn and colocated roles: per layer the FFN
// module of the layer's kind (model/ffn-module.h): DenseFfn for dense, MoeFfn for moe
// and moe+shared.
#pragma once
#include <memory>
#include <vector>

#include "model/dense-ffn.h"
#include "model/moe-ffn.h"

namespace afd {

class FfnModel {
 public:
  // experts: the routed experts to load (expert parallelism: this FFN rank's range; the
  // others stay empty and must not be routed to here).
  FfnModel(const ModelConfig& config, const WeightStore& store, Backend& backend, bool gateOnAttention, ExpertRange experts);

  // hidden: [T, H] act (post-attention-normed); routerLogits: [T, E] f32 or null (null:
  // compute them here; required when the gate runs on attention); out: [T, H] act.
  void forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out);
  int numLayers() const { return config_.numLayers; }
  bool isMoe(int layer) const { return config_.isMoeLayer(layer); }
  // Expert parallelism (ep/*.cc) routes and runs the experts itself: an MoE
  // layer's routing and shared experts (MoeFfn::route, MoeFfn::sharedExperts).
  void route(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& logits, Tensor& expertIds,
             Tensor& expertWeights);
  bool hasSharedExperts(int layer) const { return isMoe(layer) && moe_->hasSharedExperts(layer); }
  void sharedExperts(int layer, const Tensor& hidden, Tensor& out);
  // The weights of an MoE layer (its router, experts and shared experts).
  const MoeLayerWeights& layerWeights(int layer) const;
  const ExpertRange& expertRange() const { return experts_; }
  Backend& backend() const { return backend_; }
  const ModelConfig& config() const { return config_; }

 private:
  const MoeFfn& moeOf(int layer, const char* what) const;

  const ModelConfig& config_;
  Backend& backend_;
  ExpertRange experts_;
  std::unique_ptr<DenseFfn> dense_;  // when some layer is dense
  std::unique_ptr<MoeFfn> moe_;      // when some layer is moe or moe+shared
  std::vector<FfnModule*> modules_;  // [numLayers] the module of each layer's kind
};

}  // namespace afd
