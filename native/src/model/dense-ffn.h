// dense FFN: one SiLU-gated MLP per layer of kind dense,
//   out = down(silu(gate(x)) * up(x)): [T, H] -> [T, I] -> [T, H].
#pragma once
#include <vector>

#include "model/ffn-module.h"
#include "model/model-config.h"
#include "model/weight-store.h"

namespace afd {

class DenseFfn : public FfnModule {
 public:
  // Binds ffn.gate_proj / up_proj / down_proj of every dense layer.
  DenseFfn(const ModelConfig& c, const WeightStore& store, Backend& backend);

  void forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out) override;

 private:
  Backend& backend_;
  std::vector<ExpertWeights> layers_;  // [numLayers] gate [I, H], up [I, H], down [H, I]; empty for other kinds
};

}  // namespace afd
