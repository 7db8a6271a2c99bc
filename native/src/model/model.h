// The role-split model, built for a role from the layer kinds of the config and the
// slots of the load spec (model/slots.h):
//   colocated: AttentionModel + FfnModel;  attention: AttentionModel;  ffn: FfnModel.
// Each half holds only its own weights (views into the WeightStore).
//   attention half per layer (model/attention-model.h): input RMSNorm (fused with the
//     previous residual add), the attention module of the layer's kind (gqa:
//     model/gqa-attention.h; mla: model/mla-attention.h; gdn: model/gdn-attention.h), residual add, post-attention
//     RMSNorm (+ router logits when the gate is on attention). It then hands the normed
//     hidden states to the FfnExecutor.
//   FFN half per layer (model/ffn-model.h): the FFN module of the layer's kind (dense:
//     model/dense-ffn.h; moe and moe+shared: model/moe-ffn.h).
// A new layer kind is a module beside these and a case in its half's factory.
#pragma once
#include <vector>

#include "model/attention-model.h"
#include "model/ffn-model.h"
#include "model/gdn-attention.h"
#include "model/gqa-attention.h"

namespace afd {

// The tensors the weight store keeps fused (one GEMM reads them): the q/k/v of gqa
// layers, the input projections of gdn layers.
inline std::vector<FusedTensor> fusedTensors(const ModelConfig& config) {
  std::vector<FusedTensor> fused = gqaFusedTensors(config);
  for (FusedTensor& f : gdnFusedTensors(config)) fused.push_back(std::move(f));
  return fused;
}

}  // namespace afd
