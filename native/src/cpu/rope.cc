// Per-head q/k RMSNorm (Qwen3) fused with rotary position embedding (rotate-half).
#include <cmath>
#include <cstring>
#include <vector>

#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/row-math.h"

namespace afd::cpu {

// q: [T, nH, D]; k: [T, nKv, D]; positions: [T] i32; qNorm/kNorm: [D] or null.
void qkNormRope(ThreadPool& pool, Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm,
                const Tensor* kNorm, float eps, const RopeParams& rope) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = k.dim(1);
  contract::checkQkNormRope(q, k, positions, qNorm, kNorm, rope);
  std::vector<float> qw(D), kw(D);
  if (qNorm) convertElems(qNorm->data, qNorm->dtype, 0, D, qw.data());
  if (kNorm) convertElems(kNorm->data, kNorm->dtype, 0, D, kw.data());
  const float* invFreq = rope.invFreq.ptr<float>();
  // Partial RoPE: the norm covers the whole head, the rotation its first 2 x half dims.
  const int64_t half = rope.invFreq.dim(0);
  pool.parallelFor(T, 1, [&](int64_t b, int64_t e) {
    std::vector<float> cosv(half), sinv(half);
    for (int64_t t = b; t < e; ++t) {
      ropeCosSin(positions.ptr<int32_t>()[t], invFreq, half, rope.attentionScale, cosv.data(), sinv.data());
      for (int64_t h = 0; h < nH; ++h) {
        float* x = q.ptr<float>() + (t * nH + h) * D;
        if (qNorm) rmsNormRow(x, qw.data(), eps, D, x);
        rotateHalf(x, cosv.data(), sinv.data(), half);
      }
      for (int64_t h = 0; h < nKv; ++h) {
        float* x = k.ptr<float>() + (t * nKv + h) * D;
        if (kNorm) rmsNormRow(x, kw.data(), eps, D, x);
        rotateHalf(x, cosv.data(), sinv.data(), half);
      }
    }
  });
}

// The fused prologue as the composition of qkNormRope and writeKvCache on q / k / v
// copied out of the projection rows (the same arithmetic as the separate ops).
void qkNormRopeCache(ThreadPool& pool, const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping,
                     const Tensor* qNorm, const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q,
                     Tensor& kCache, Tensor& vCache) {
  contract::checkQkNormRopeCache(qkv, positions, slotMapping, qNorm, kNorm, rope, q, kCache, vCache);
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = kCache.dim(2);
  const int64_t qDim = nH * D, kvDim = nKv * D, row = qDim + 2 * kvDim;
  std::vector<float> k(static_cast<size_t>(T * kvDim)), v(static_cast<size_t>(T * kvDim));
  const float* src = qkv.ptr<float>();
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(q.ptr<float>() + t * qDim, src + t * row, qDim * sizeof(float));
    std::memcpy(&k[t * kvDim], src + t * row + qDim, kvDim * sizeof(float));
    std::memcpy(&v[t * kvDim], src + t * row + qDim + kvDim, kvDim * sizeof(float));
  }
  Tensor kt(k.data(), DType::F32, {T, nKv, D}), vt(v.data(), DType::F32, {T, nKv, D});
  qkNormRope(pool, q, kt, positions, qNorm, kNorm, eps, rope);
  writeKvCache(pool, kt, vt, slotMapping, kCache, vCache);
}

}  // namespace afd::cpu
