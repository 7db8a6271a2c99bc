// The FFN module of a layer kind (model/layer-kinds.h): what the FFN half runs on the
// post-attention-normed rows of one layer. One module per kind holds the weights of the
// layers of that kind; FfnModel (model/ffn-model.h) picks it per layer.
#pragma once
#include "core/backend.h"

namespace afd {

class FfnModule {
 public:
  virtual ~FfnModule() = default;

  // out = FFN(hidden) of one layer: hidden [T, H] act (post-attention-normed);
  // routerLogits [T, E] f32 from the attention half (the gate runs there) or null;
  // out [T, H] act. T > 0.
  virtual void forward(int layer, const Tensor& hidden, const Tensor* routerLogits, Tensor& out) = 0;
};

}  // namespace afd
