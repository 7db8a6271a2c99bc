// Elementwise add and row gather.
#include <cstring>

#include "cpu/check.h"
#include "cpu/op-contracts.h"
#include "cpu/ops.h"

namespace afd::cpu {

// out = a + b.   a, b, out: same shape, f32.
void add(ThreadPool& pool, const Tensor& a, const Tensor& b, Tensor& out) {
  AFD_CHECK(a.numel() == b.numel() && a.numel() == out.numel(),
            "add: shapes differ: " << a.shapeString() << " + " << b.shapeString() << " -> " << out.shapeString());
  pool.parallelFor(a.numel(), 1 << 14, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) out.ptr<float>()[i] = a.ptr<float>()[i] + b.ptr<float>()[i];
  });
}

// out[s] = x[rows[s]].   x: [T, H] f32; rows: [S] i32; out: [S, H] f32.
void gatherRows(ThreadPool& /*pool*/, const Tensor& x, const Tensor& rows, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1), S = rows.dim(0);
  checkGatherRows(x, rows, out);
  for (int64_t s = 0; s < S; ++s) {
    const int32_t r = rows.ptr<int32_t>()[s];
    AFD_CHECK(r >= 0 && r < T, "gatherRows: row " << r << " is outside [0, " << T << ")");
    std::memmove(out.ptr<float>() + s * H, x.ptr<float>() + r * H, H * sizeof(float));
  }
}

}  // namespace afd::cpu
