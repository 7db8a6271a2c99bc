// Per-head q/k RMSNorm (Qwen3) fused with rotary position embedding (rotate-half).
#include <cmath>
#include <vector>

#include "cpu/check.h"
#include "cpu/op-contracts.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/row-math.h"

namespace afd::cpu {

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
      ropeCosSin(positions.ptr<int32_t>()[t], invFreq, D / 2, rope.attentionScale, cosv.data(), sinv.data());
      for (int64_t h = 0; h < nH; ++h) {
        float* x = q.ptr<float>() + (t * nH + h) * D;
        if (qNorm) rmsNormRow(x, qw.data(), eps, D, x);
        rotateHalf(x, cosv.data(), sinv.data(), D / 2);
      }
      for (int64_t h = 0; h < nKv; ++h) {
        float* x = k.ptr<float>() + (t * nKv + h) * D;
        if (kNorm) rmsNormRow(x, kw.data(), eps, D, x);
        rotateHalf(x, cosv.data(), sinv.data(), D / 2);
      }
    }
  });
}

}  // namespace afd::cpu
