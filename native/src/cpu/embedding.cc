// Token embedding lookup.
#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace afd::cpu {

// ids: [T] i32; table: [V, H]; out: [T, H] f32.
void embedding(ThreadPool& pool, const Tensor& ids, const Tensor& table, Tensor& out) {
  const int64_t T = ids.dim(0), V = table.dim(0), H = table.dim(1);
  contract::checkEmbedding(ids, table, out);
  const int32_t* id = ids.ptr<int32_t>();
  for (int64_t t = 0; t < T; ++t)
    AFD_CHECK(id[t] >= 0 && id[t] < V, "embedding: token id " << id[t] << " at index " << t << " is outside the vocabulary [0, " << V << ")");
  pool.parallelFor(T, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) convertRow(table, id[t], out.ptr<float>() + t * H);
  });
}

}  // namespace afd::cpu
