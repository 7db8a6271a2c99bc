// The CUDA backend's attention ops: q/k norm + RoPE (in place, or fused with the KV cache
// write from the fused qkv rows), the KV cache write, and paged attention over the cache
// (cuda/attention.cuh picks the SIMT or tensor-core family and the context split; the
// split counters live here, the split partials in the backend scratch).
#pragma once
#include "core/backend.h"
#include "cuda/device-buffer.h"
#include "cuda/device-memory.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class AttentionOps {
 public:
  AttentionOps(StreamContext& ctx, DeviceMemory& memory) : ctx_(ctx), memory_(memory) {}

  void qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm, float eps,
                  const RopeParams& rope);
  void qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping, const Tensor* qNorm,
                       const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q, Tensor& kCache, Tensor& vCache);
  void writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache, Tensor& vCache);
  void pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache, const AttentionBatch& batch, float scale,
                      Tensor& out);

 private:
  StreamContext& ctx_;
  DeviceMemory& memory_;
  DeviceBuffer splitCounters_;  // [T * nKv] i32 of split attention (zero between launches)
};

}  // namespace afd::cuda
