// The CUDA backend's linear-attention ops (Qwen3-Next / Qwen3.5 Gated DeltaNet; core/backend.h,
// "linear attention"): the shape contracts shared with the CPU
// (core/linear-attention-contracts.h), then the kernels of cuda/linear-attention.cuh.
// Activations f32 in and out, as the CPU ops take them. Nothing here synchronizes, copies
// to the host or allocates: the batch arrays stay on the device and only the kernels read
// them, so a warmed step captures into a CUDA graph. Hence the batch's values (offsets,
// distinct slots, hasState 0/1) are trusted here; the CPU op checks them.
#pragma once
#include <vector>

#include "core/backend.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class LinearAttentionOps {
 public:
  explicit LinearAttentionOps(StreamContext& ctx) : ctx_(ctx) {}

  void causalConv1d(const Tensor& x, const Tensor& weight, Tensor& convState, const LinearAttentionBatch& batch,
                    Tensor& out);
  void gatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                      Tensor& state, const LinearAttentionBatch& batch, Tensor& out);
  void rmsNormGated(const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out);
  void gdnGating(const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g, Tensor& beta);
  void splitColumns(const Tensor& x, const std::vector<Tensor*>& outs);

 private:
  StreamContext& ctx_;
};

}  // namespace afd::cuda
