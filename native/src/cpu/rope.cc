// Per-head q/k RMSNorm (Qwen3) fused with rotary position embedding (rotate-half).
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/check.h"
#include "cpu/op-contracts.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace afd::cpu {
namespace {

void normHead(float* x, const float* w, float eps, int64_t D) {
  double ss = 0;
  for (int64_t i = 0; i < D; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(D) + eps));
  for (int64_t i = 0; i < D; ++i) x[i] = w[i] * (x[i] * inv);
}

// x[i], x[i + D/2] rotated by angle_i: cos/sin: [D/2].
void rotateHead(float* x, const float* cosv, const float* sinv, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float x1 = x[i], x2 = x[i + half];
    x[i] = x1 * cosv[i] - x2 * sinv[i];
    x[i + half] = x2 * cosv[i] + x1 * sinv[i];
  }
}

}  // namespace

// q: [T, nH, D]; k: [T, nKv, D]; positions: [T] i32; qNorm/kNorm: [D] or null.
void qkNormRope(ThreadPool& pool, Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm,
                const Tensor* kNorm, float eps, const RopeParams& rope) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = k.dim(1);
  checkQkNormRope(q, k, positions, qNorm, kNorm, rope);
  std::vector<float> qw(D), kw(D);
  if (qNorm) convertElems(qNorm->data, qNorm->dtype, 0, D, qw.data());
  if (kNorm) convertElems(kNorm->data, kNorm->dtype, 0, D, kw.data());
  const float* invFreq = rope.invFreq.ptr<float>();
  pool.parallelFor(T, 1, [&](int64_t b, int64_t e) {
    std::vector<float> cosv(D / 2), sinv(D / 2);
    for (int64_t t = b; t < e; ++t) {
      // Angle in f32 like HF (inv_freq.float() @ position.float()), cos/sin of it.
      const float pos = static_cast<float>(positions.ptr<int32_t>()[t]);
      for (int64_t i = 0; i < D / 2; ++i) {
        const float angle = pos * invFreq[i];
        cosv[i] = static_cast<float>(std::cos(static_cast<double>(angle))) * rope.attentionScale;
        sinv[i] = static_cast<float>(std::sin(static_cast<double>(angle))) * rope.attentionScale;
      }
      for (int64_t h = 0; h < nH; ++h) {
        float* x = q.ptr<float>() + (t * nH + h) * D;
        if (qNorm) normHead(x, qw.data(), eps, D);
        rotateHead(x, cosv.data(), sinv.data(), D);
      }
      for (int64_t h = 0; h < nKv; ++h) {
        float* x = k.ptr<float>() + (t * nKv + h) * D;
        if (kNorm) normHead(x, kw.data(), eps, D);
        rotateHead(x, cosv.data(), sinv.data(), D);
      }
    }
  });
}

// The fused prologue as the composition of qkNormRope and writeKvCache on q / k / v
// copied out of the projection rows (the same arithmetic as the separate ops).
void qkNormRopeCache(ThreadPool& pool, const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping,
                     const Tensor* qNorm, const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q,
                     Tensor& kCache, Tensor& vCache) {
  checkQkNormRopeCache(qkv, positions, slotMapping, qNorm, kNorm, rope, q, kCache, vCache);
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
