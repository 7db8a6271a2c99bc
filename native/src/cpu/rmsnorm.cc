// RMSNorm and the fused residual-add + RMSNorm.
#include <cmath>
#include <vector>

#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/row-math.h"

namespace afd::cpu {
namespace {

std::vector<float> weightF32(const Tensor& w) {
  std::vector<float> f(static_cast<size_t>(w.numel()));
  convertElems(w.data, w.dtype, 0, w.numel(), f.data());
  return f;
}

}  // namespace

// x, out: [T, H] f32; weight: [H].
void rmsNorm(ThreadPool& pool, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1);
  contract::checkRmsNorm(x, weight, out);
  checkCpuF32("rmsNorm", "out", out);
  const std::vector<float> w = weightF32(weight);
  pool.parallelFor(T, 4, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) rmsNormRow(x.ptr<float>() + t * H, w.data(), eps, H, out.ptr<float>() + t * H);
  });
}

// residual += delta; out = rmsNorm(residual).   delta, residual, out: [T, H] f32.
void addRmsNorm(ThreadPool& pool, const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = residual.dim(0), H = residual.dim(1);
  contract::checkAddRmsNorm(delta, residual, weight, out);
  checkCpuF32("addRmsNorm", "delta", delta);
  checkCpuF32("addRmsNorm", "out", out);
  const std::vector<float> w = weightF32(weight);
  pool.parallelFor(T, 4, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* r = residual.ptr<float>() + t * H;
      const float* d = delta.ptr<float>() + t * H;
      for (int64_t i = 0; i < H; ++i) r[i] += d[i];
      rmsNormRow(r, w.data(), eps, H, out.ptr<float>() + t * H);
    }
  });
}

}  // namespace afd::cpu
