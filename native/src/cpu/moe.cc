// Routed experts: tokens are grouped by expert, each expert runs its SiLU-gated MLP
// on its rows, and the weighted outputs are summed per token in expert-id order (so a
// token's result does not depend on its batch mates).
#include <cstring>
#include <vector>

#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace afd::cpu {

// x: [T, H] f32; expertIds, expertWeights: [T, K]; experts: E entries; out: [T, H] f32.
void moeExperts(ThreadPool& pool, const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                const std::vector<ExpertWeights>& experts, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1), K = expertIds.dim(1);
  const int64_t E = static_cast<int64_t>(experts.size());
  contract::checkMoeExperts(x, expertIds, expertWeights, out);
  checkCpuF32("moeExperts", "x", x);
  // rows[e]: (token, weight) pairs routed to expert e.
  std::vector<std::vector<std::pair<int64_t, float>>> rows(E);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < K; ++j) {
      const int32_t id = expertIds.ptr<int32_t>()[t * K + j];
      AFD_CHECK(id >= 0 && id < E, "moeExperts: expert id " << id << " of token " << t << " is outside [0, " << E << ")");
      rows[id].push_back({t, expertWeights.ptr<float>()[t * K + j]});
    }
  }
  std::memset(out.data, 0, out.bytes());
  std::vector<float> xs, ys;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = static_cast<int64_t>(rows[e].size());
    if (n == 0) continue;
    AFD_CHECK(!experts[e].gate.empty(), "moeExperts: expert " << e << " is routed to but its weights are not loaded");
    xs.resize(static_cast<size_t>(n * H));
    ys.resize(static_cast<size_t>(n * H));
    for (int64_t r = 0; r < n; ++r) std::memcpy(&xs[r * H], x.ptr<float>() + rows[e][r].first * H, H * sizeof(float));
    Tensor xt(xs.data(), DType::F32, {n, H}), yt(ys.data(), DType::F32, {n, H});
    siluGatedMlp(pool, xt, experts[e].gate, experts[e].up, experts[e].down, yt);
    for (int64_t r = 0; r < n; ++r) axpy(rows[e][r].second, &ys[r * H], out.ptr<float>() + rows[e][r].first * H, H);
  }
}

}  // namespace afd::cpu
