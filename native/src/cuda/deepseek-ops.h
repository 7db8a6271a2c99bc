// The CUDA backend's DeepSeek ops (MLA prologue, latent cache write, absorbed MLA
// attention over the paged latent cache, grouped router, routing scatter): the same
// contracts as the CPU ops (core/deepseek-contracts.h), then the kernels of
// cuda/mla-prologue.cuh, cuda/mla-attention.cuh and cuda/deepseek-route.cuh. Nothing here
// synchronizes or copies to the host; the attention's workspace is the backend scratch,
// so a warmed step captures into a CUDA graph.
#pragma once
#include "core/backend.h"
#include "cuda/device-memory.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class DeepseekOps {
 public:
  DeepseekOps(StreamContext& ctx, DeviceMemory& memory) : ctx_(ctx), memory_(memory) {}

  void mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions, const RopeParams& rope,
                   bool interleaved);
  void writeLatentCache(const Tensor& kvA, const Tensor& slotMapping, Tensor& latentCache);
  void mlaAttention(const Tensor& q, const Tensor& latentCache, const Tensor& kvB, const AttentionBatch& batch, float scale,
                    Tensor& out);
  void moeGroupedRoute(const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p, Tensor& expertIds,
                       Tensor& expertWeights);
  void scatterRouting(const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense);

 private:
  StreamContext& ctx_;
  DeviceMemory& memory_;
};

}  // namespace afd::cuda
