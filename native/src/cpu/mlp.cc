// SiLU-gated MLP: down(silu(gate(x)) * up(x)).
#include <cmath>

#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/ops.h"

namespace afd::cpu {

// x: [T, H] f32; gate, up: [I, H]; down: [H, I]; out: [T, H] f32.
void siluGatedMlp(ThreadPool& pool, const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down,
                  Tensor& out) {
  contract::checkSiluGatedMlp(x, gate, up, down, out);
  checkCpuF32("siluGatedMlp", "x", x);
  const int64_t T = x.dim(0), I = gate.dim(0);
  std::vector<float> g(static_cast<size_t>(T * I)), u(static_cast<size_t>(T * I));
  Tensor gt(g.data(), DType::F32, {T, I}), ut(u.data(), DType::F32, {T, I});
  matmul(pool, x, gate, nullptr, gt);
  matmul(pool, x, up, nullptr, ut);
  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  matmul(pool, gt, down, nullptr, out);
}

}  // namespace afd::cpu
