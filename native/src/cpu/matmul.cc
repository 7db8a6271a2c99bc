// out = x @ w^T (+ bias) with f32 activations and f32 / bf16 / f16 weights.
#include <algorithm>
#include <vector>

#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace afd::cpu {
namespace {

constexpr int64_t kRowTile = 16;  // weight rows per tile: reused from cache for every x row

// out[t, n] for n in [n0, n1). Each (t, n) is computed exactly like dot() / dotBf16()
// whatever T is, so a row's result never depends on its batch mates or the batch size.
void matmulRows(const Tensor& x, const Tensor& w, int64_t n0, int64_t n1, float* out, int64_t N) {
  const int64_t T = x.dim(0), K = x.dim(1);
  std::vector<float> tile(w.dtype == DType::F16 ? static_cast<size_t>(kRowTile * K) : 0);
  for (int64_t nb = n0; nb < n1; nb += kRowTile) {
    const int64_t rows = std::min(kRowTile, n1 - nb);
    if (w.dtype == DType::F16)
      for (int64_t r = 0; r < rows; ++r) convertRow(w, nb + r, tile.data() + r * K);
    // Up to 4 x rows per weight-row load.
    for (int64_t t = 0; t < T; t += 4) {
      const int nx = static_cast<int>(std::min<int64_t>(4, T - t));
      const float* xs[4];
      for (int j = 0; j < nx; ++j) xs[j] = x.ptr<float>() + (t + j) * K;
      float res[4];
      for (int64_t r = 0; r < rows; ++r) {
        switch (w.dtype) {
          case DType::F32: dotRows(xs, nx, w.ptr<float>() + (nb + r) * K, K, res); break;
          case DType::BF16: dotRowsBf16(xs, nx, w.ptr<uint16_t>() + (nb + r) * K, K, res); break;
          default: dotRows(xs, nx, tile.data() + r * K, K, res); break;
        }
        for (int j = 0; j < nx; ++j) out[(t + j) * N + nb + r] = res[j];
      }
    }
  }
}

}  // namespace

// x: [T, K] f32; w: [N, K]; bias: [N] or null; out: [T, N] f32 (must not alias x).
void matmul(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  const int64_t T = x.dim(0), K = x.dim(1), N = w.dim(0);
  contract::checkMatmul(x, w, bias, out);
  checkCpuF32("matmul", "x", x);
  if (T == 0) return;
  // Enough rows per chunk that each chunk streams a few KB of weights.
  const int64_t grain = std::max<int64_t>(kRowTile, 4096 / std::max<int64_t>(1, K));
  pool.parallelFor(N, grain, [&](int64_t n0, int64_t n1) {
    matmulRows(x, w, n0, n1, out.ptr<float>(), N);
  });
  if (bias) {
    std::vector<float> b(N);
    convertElems(bias->data, bias->dtype, 0, N, b.data());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t n = 0; n < N; ++n) out.ptr<float>()[t * N + n] += b[n];
  }
}

// out += x @ w^T (+ bias): the product (with its bias) is formed first, then added, so a
// residual add gives the same bits as matmul followed by add.
void matmulAdd(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  contract::checkMatmul(x, w, bias, out);
  std::vector<float> product(static_cast<size_t>(out.numel()));
  Tensor p(product.data(), DType::F32, {out.dim(0), out.dim(1)});
  matmul(pool, x, w, bias, p);
  float* o = out.ptr<float>();
  for (size_t i = 0; i < product.size(); ++i) o[i] += product[i];
}

}  // namespace afd::cpu
