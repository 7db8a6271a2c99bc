// Paged KV cache write and causal attention over the paged cache (prefill and decode).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/op-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/paged-batch.h"

namespace afd::cpu {

// k, v: [T, nKv, D] f32; slotMapping: [T] i32; caches: [numBlocks, B, nKv, D].
void writeKvCache(ThreadPool& pool, const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache,
                  Tensor& vCache) {
  const int64_t T = k.dim(0), nKv = k.dim(1), D = k.dim(2);
  contract::checkWriteKvCache(k, v, slotMapping, kCache, vCache);
  const int64_t numSlots = kCache.dim(0) * kCache.dim(1);
  const int64_t row = nKv * D;
  const int32_t* slots = slotMapping.ptr<int32_t>();
  for (int64_t t = 0; t < T; ++t)
    AFD_CHECK(slots[t] < numSlots, "writeKvCache: slot " << slots[t] << " of token " << t << " is outside the cache ("
                                                         << numSlots << " slots)");
  pool.parallelFor(T, 8, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      if (slots[t] < 0) continue;
      storeElems(k.ptr<float>() + t * row, kCache.dtype, kCache.data, slots[t] * row, row);
      storeElems(v.ptr<float>() + t * row, vCache.dtype, vCache.data, slots[t] * row, row);
    }
  });
}

// q, out: [T, nH, D] f32; caches: [numBlocks, B, nKv, D]; batch: see core/backend.h.
void pagedAttention(ThreadPool& pool, const Tensor& q, const Tensor& kCache, const Tensor& vCache,
                    const AttentionBatch& batch, float scale, Tensor& out) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2);
  const int64_t numBlocks = kCache.dim(0), B = kCache.dim(1), nKv = kCache.dim(2);
  contract::checkPagedAttention(q, kCache, vCache, batch, out);
  AFD_CHECK(nKv > 0 && nH % nKv == 0, "pagedAttention: " << nH << " query heads are not a multiple of " << nKv << " KV heads");
  const int64_t group = nH / nKv;
  const int32_t* tokenSeq = batch.tokenSeq.ptr<int32_t>();
  const int32_t* positions = batch.positions.ptr<int32_t>();
  const int32_t* tables = batch.blockTables.ptr<int32_t>();
  const int64_t maxCtx = checkPagedBatch("pagedAttention", batch, T, numBlocks, B);
  const bool f32Cache = kCache.dtype == DType::F32 && vCache.dtype == DType::F32;
  const int64_t rowElems = nKv * D;
  // One work item per (token, query head).
  pool.parallelFor(T * nH, 1, [&](int64_t b, int64_t e) {
    std::vector<float> scores(static_cast<size_t>(maxCtx));
    std::vector<float> kvRow(f32Cache ? 0 : D);
    std::vector<float> acc(D);
    for (int64_t item = b; item < e; ++item) {
      const int64_t t = item / nH, h = item % nH, kvh = h / group;
      const int32_t* table = tables + tokenSeq[t] * batch.maxBlocksPerSeq;
      const float* qv = q.ptr<float>() + item * D;
      const int64_t ctx = positions[t] + 1;
      float maxScore = -INFINITY;
      for (int64_t p = 0; p < ctx; ++p) {
        const int64_t elem = (static_cast<int64_t>(table[p / B]) * B + p % B) * rowElems + kvh * D;
        float s;
        if (f32Cache) {
          s = dot(qv, kCache.ptr<float>() + elem, D);
        } else {
          convertElems(kCache.data, kCache.dtype, elem, D, kvRow.data());
          s = dot(qv, kvRow.data(), D);
        }
        s *= scale;
        scores[p] = s;
        maxScore = std::max(maxScore, s);
      }
      double sum = 0;
      for (int64_t p = 0; p < ctx; ++p) {
        const float w = std::exp(scores[p] - maxScore);
        scores[p] = w;
        sum += w;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t p = 0; p < ctx; ++p) {
        const int64_t elem = (static_cast<int64_t>(table[p / B]) * B + p % B) * rowElems + kvh * D;
        const float* vv;
        if (f32Cache) {
          vv = vCache.ptr<float>() + elem;
        } else {
          convertElems(vCache.data, vCache.dtype, elem, D, kvRow.data());
          vv = kvRow.data();
        }
        axpy(scores[p], vv, acc.data(), D);
      }
      float* o = out.ptr<float>() + item * D;
      for (int64_t i = 0; i < D; ++i) o[i] = static_cast<float>(acc[i] / sum);
    }
  });
}

}  // namespace afd::cpu
