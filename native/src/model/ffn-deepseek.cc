// The DeepSeek parts of the FFN half: grouped routing and the shared experts.
#include "model/model.h"

namespace afd {

void FfnModel::routeGrouped(const FfnLayer& f, const Tensor& logits, bool denseFromAttention, Tensor& ids, Tensor& weights) {
  // With the gate on attention, what arrives are the dense routing weights it chose.
  if (denseFromAttention) router_->routeDense(logits, ids, weights);
  else router_->route(logits, f.routerBias, ids, weights);
}

void FfnModel::addSharedExperts(const FfnLayer& f, const Tensor& hidden, Tensor& out) {
  Tensor shared = sharedOut_.view(DType::F32, {hidden.dim(0), config_.hiddenSize});
  backend_.siluGatedMlp(hidden, f.shared.gate, f.shared.up, f.shared.down, shared);
  backend_.add(out, shared, out);
}

}  // namespace afd
