#include "cuda/attention-ops.h"

#include "core/op-contracts.h"
#include "cuda/attention.cuh"
#include "cuda/cuda-check.h"
#include "cuda/host-helpers.h"
#include "cuda/rope.cuh"

namespace afd::cuda {

namespace {

QkNormRopeArgs ropeArgs(const Tensor* qNorm, const Tensor* kNorm, float eps, const RopeParams& rope, const Tensor& positions,
                        int64_t T, int64_t nH, int64_t nKv, int64_t D) {
  AFD_CHECK(!qNorm || !kNorm || qNorm->dtype == kNorm->dtype, "qkNormRope: q and k norms must share a dtype");
  QkNormRopeArgs a;
  a.qNorm = qNorm ? qNorm->data : nullptr;
  a.kNorm = kNorm ? kNorm->data : nullptr;
  a.normDtype = qNorm ? code(qNorm->dtype) : (kNorm ? code(kNorm->dtype) : 2);
  a.invFreq = rope.invFreq.ptr<float>();
  a.rotaryDim = static_cast<int>(2 * rope.invFreq.dim(0));
  a.attentionScale = rope.attentionScale;
  a.positions = positions.ptr<int32_t>();
  a.rows = static_cast<int>(T);
  a.numHeads = static_cast<int>(nH);
  a.numKvHeads = static_cast<int>(nKv);
  a.headDim = static_cast<int>(D);
  a.eps = eps;
  return a;
}

}  // namespace

void AttentionOps::qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm,
                             float eps, const RopeParams& rope) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = k.dim(1);
  contract::checkQkNormRope(q, k, positions, qNorm, kNorm, rope);
  QkNormRopeArgs a = ropeArgs(qNorm, kNorm, eps, rope, positions, T, nH, nKv, D);
  a.qIn = q.ptr<float>();
  a.kIn = k.ptr<float>();
  a.qRowStride = nH * D;
  a.kRowStride = nKv * D;
  a.qOut = q.ptr<float>();
  a.kOut = k.ptr<float>();
  cuda::qkNormRope(a, ctx_.stream());
}

void AttentionOps::qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping,
                                  const Tensor* qNorm, const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q,
                                  Tensor& kCache, Tensor& vCache) {
  contract::checkQkNormRopeCache(qkv, positions, slotMapping, qNorm, kNorm, rope, q, kCache, vCache);
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = kCache.dim(2), row = (nH + 2 * nKv) * D;
  QkNormRopeArgs a = ropeArgs(qNorm, kNorm, eps, rope, positions, T, nH, nKv, D);
  a.qIn = qkv.ptr<float>();
  a.kIn = a.qIn + nH * D;
  a.vIn = a.kIn + nKv * D;
  a.qRowStride = a.kRowStride = a.vRowStride = row;
  a.qOut = q.ptr<float>();
  a.slotMapping = slotMapping.ptr<int32_t>();
  a.kCache = kCache.data;
  a.vCache = vCache.data;
  a.cacheDtype = code(kCache.dtype);
  cuda::qkNormRope(a, ctx_.stream());
}

void AttentionOps::writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache,
                               Tensor& vCache) {
  const int64_t T = k.dim(0), nKv = k.dim(1), D = k.dim(2);
  contract::checkWriteKvCache(k, v, slotMapping, kCache, vCache);
  contract::checkFloat("writeKvCache", "kCache", kCache);
  AFD_CHECK(kCache.dtype == vCache.dtype, "writeKvCache: k and v caches must share a dtype");
  cuda::writeKvCache(k.ptr<float>(), v.ptr<float>(), slotMapping.ptr<int32_t>(), kCache.data, vCache.data,
                     code(kCache.dtype), static_cast<int>(T), static_cast<int>(nKv), static_cast<int>(D), ctx_.stream());
}

void AttentionOps::pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache,
                                 const AttentionBatch& batch, float scale, Tensor& out) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2);
  const int64_t B = kCache.dim(1), nKv = kCache.dim(2);
  contract::checkPagedAttention(q, kCache, vCache, batch, out);
  AFD_CHECK(kCache.dtype == vCache.dtype, "pagedAttention: k and v caches must share a dtype");
  if (T == 0) return;
  PagedAttentionArgs a;
  a.q = q.ptr<float>();
  a.kCache = kCache.data;
  a.vCache = vCache.data;
  a.cacheDtype = code(kCache.dtype);
  a.blockTables = batch.blockTables.ptr<int32_t>();
  a.querySeq = batch.tokenSeq.ptr<int32_t>();
  a.positions = batch.positions.ptr<int32_t>();
  a.out = out.ptr<float>();
  a.numQueries = static_cast<int>(T);
  a.numHeads = static_cast<int>(nH);
  a.numKvHeads = static_cast<int>(nKv);
  a.headDim = static_cast<int>(D);
  a.blockSize = static_cast<int>(B);
  a.maxBlocksPerSeq = batch.maxBlocksPerSeq;
  const int shape = static_cast<int>(ctx_.shapeRows(T));
  a.numSplits = batch.maxContextLen > 256 || batch.maxContextLen == 0 ? attentionSplits(shape, a.numKvHeads, ctx_.multiProcessors(), ctx_.options().attentionBlocksPerSm) : 1;
  a.scale = scale;
  a.maxQueryLen = batch.maxQueryLen;  // > 1: tiled tensor-core prefill where the shape fits (attention.cuh)
  a.numSeqs = batch.numSeqs;
  // The family for the options' preference; a DBO stage runs the one the whole step would
  // (picked by query count).
  PagedAttentionArgs whole = a;
  whole.numQueries = shape;
  a.kernel = resolveAttentionKernel(whole, ctx_.options().attentionKernel);
  a.precision = ctx_.options().attentionPrecision;
  const size_t counters = sizeof(int32_t) * static_cast<size_t>(T * nKv);
  if (a.numSplits > 1 && splitCounters_.bytes() < counters) {
    ctx_.refuseWhileCapturing("growing the attention split counters");
    ctx_.bumpEpoch();
    ctx_.synchronize();
    splitCounters_ = DeviceBuffer();
    splitCounters_ = DeviceBuffer("attention split counters", counters);
    AFD_CUDA_CHECK(cudaMemsetAsync(splitCounters_.data(), 0, counters, ctx_.stream()));
  }
  a.splitCounters = splitCounters_.as<int32_t>();
  // Split partials only exist with numSplits > 1 (a long prefill would otherwise size the
  // scratch for [T, nH, D + 2] floats it never touches).
  if (a.numSplits > 1)
    a.workspace = static_cast<float*>(memory_.scratch(attentionWorkspaceBytes(a.numQueries, a.numHeads, a.headDim, a.numSplits)));
  cuda::pagedAttention(a, ctx_.stream());
}

}  // namespace afd::cuda
