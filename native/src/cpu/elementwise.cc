// Elementwise add, sigmoid gate and row gather.
#include <cmath>
#include <cstring>

#include "core/dummy-weights.h"
#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/ops.h"

namespace afd::cpu {

// out = a + b.   a, b, out: same size, f32.
void add(ThreadPool& pool, const Tensor& a, const Tensor& b, Tensor& out) {
  contract::checkAdd(a, b, out);
  checkCpuF32("add", "a", a);
  pool.parallelFor(a.numel(), 1 << 14, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) out.ptr<float>()[i] = a.ptr<float>()[i] + b.ptr<float>()[i];
  });
}

// out[t, i] = x[t, i] * sigmoid(gate[t, i / (N / G)]), the sigmoid in double like the
// other CPU row math.   x, out: [T, N] f32; gate: [T, G] f32.
void sigmoidGate(ThreadPool& pool, const Tensor& x, const Tensor& gate, Tensor& out) {
  contract::checkSigmoidGate(x, gate, out);
  checkCpuF32("sigmoidGate", "x", x);
  const int64_t N = x.dim(1), G = gate.dim(1), group = N / G;
  pool.parallelFor(x.dim(0), 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      for (int64_t g = 0; g < G; ++g) {
        const float s = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(gate.ptr<float>()[t * G + g]))));
        const int64_t base = t * N + g * group;
        for (int64_t i = 0; i < group; ++i) out.ptr<float>()[base + i] = x.ptr<float>()[base + i] * s;
      }
    }
  });
}

// out[s] = x[rows[s]].   x: [T, H]; rows: [S] i32; out: [S, H], x's dtype.
void gatherRows(ThreadPool& /*pool*/, const Tensor& x, const Tensor& rows, Tensor& out) {
  const int64_t T = x.dim(0), S = rows.dim(0);
  contract::checkGatherRows(x, rows, out);
  const size_t rowBytes = static_cast<size_t>(x.dim(1)) * dtypeBytes(x.dtype);
  for (int64_t s = 0; s < S; ++s) {
    const int32_t r = rows.ptr<int32_t>()[s];
    AFD_CHECK(r >= 0 && r < T, "gatherRows: row " << r << " is outside [0, " << T << ")");
    std::memmove(out.ptr<char>() + s * rowBytes, x.ptr<char>() + r * rowBytes, rowBytes);
  }
}

// t[i] = dummyValue(key, i, scale, offset) in t's float dtype.
void fillRandom(ThreadPool& pool, Tensor& t, uint64_t key, float scale, float offset) {
  contract::checkFloat("fillRandom", "tensor", t);
  pool.parallelFor(t.numel(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float v = dummyValue(key, static_cast<uint64_t>(i), scale, offset);
      switch (t.dtype) {
        case DType::F32: t.ptr<float>()[i] = v; break;
        case DType::BF16: t.ptr<uint16_t>()[i] = f32ToBf16(v); break;
        default: t.ptr<uint16_t>()[i] = f32ToF16(v); break;
      }
    }
  });
}

}  // namespace afd::cpu
