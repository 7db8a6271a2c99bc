// Allowed-token mask, logit bias and penalties in place (the rule of core/logit-ops.h,
// LogitProcessing): masked-out tokens become -Infinity and the entries skip them; bias
// first, then per seen token the repetition penalty, then frequency and presence.
#include <limits>

#include "core/error.h"
#include "cpu/check.h"
#include "cpu/ops.h"
#include "cpu/penalty-table.h"

namespace afd::cpu {

namespace {

// One seen token of a row: the repetition penalty, then frequency and presence.
inline void penalize(float& x, int32_t count, float rep, float freq, float pres) {
  x = x > 0 ? x / rep : x * rep;
  x -= freq * static_cast<float>(count);
  if (count > 0) x -= pres;
}

}  // namespace

// logits: [S, V] f32 (in place).
void processLogits(ThreadPool& pool, Tensor& logits, const LogitProcessing& p, const PenaltyTable* table) {
  contract::checkShape("processLogits", "logits", logits, {-1, -1});
  contract::checkDType("processLogits", "logits", logits, DType::F32);
  const int64_t S = logits.dim(0), V = logits.dim(1);
  AFD_CHECK(p.maskRow == nullptr || p.maskWords == maskWordsOf(V),
            "processLogits: mask rows of " << p.maskWords << " words, expected ceil(V " << V << " / 32) = " << maskWordsOf(V));
  for (int64_t r = 0; p.maskRow != nullptr && r < S; ++r)
    AFD_CHECK(p.maskRow[r] >= -1 && p.maskRow[r] < p.numMaskRows,
              "processLogits: row " << r << " reads mask row " << p.maskRow[r] << " of " << p.numMaskRows);
  pool.parallelFor(S, 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* l = logits.ptr<float>() + r * V;
      const int32_t m = p.maskRow != nullptr ? p.maskRow[r] : -1;
      const int32_t* mask = m >= 0 ? p.mask + static_cast<int64_t>(m) * p.maskWords : nullptr;
      const auto allowed = [&](int32_t id) { return mask == nullptr || maskAllows(mask, id); };
      if (mask != nullptr)
        for (int64_t t = 0; t < V; ++t)
          if (!maskAllows(mask, t)) l[t] = -std::numeric_limits<float>::infinity();
      for (int32_t i = p.biasOffsets[r]; i < p.biasOffsets[r + 1]; ++i)
        if (allowed(p.biasIds[i])) l[p.biasIds[i]] += p.biasValues[i];
      const float rep = p.repetition[r], freq = p.frequency[r], pres = p.presence[r];
      for (int32_t i = p.seenOffsets[r]; i < p.seenOffsets[r + 1]; ++i)
        if (allowed(p.seenIds[i])) penalize(l[p.seenIds[i]], p.seenCounts[i], rep, freq, pres);
      const int32_t slot = p.penaltySlot != nullptr ? p.penaltySlot[r] : -1;
      if (slot < 0) continue;
      AFD_CHECK(table != nullptr, "processLogits: row " << r << " reads penalty slot " << slot << " but no table was given");
      const int32_t* seen = table->row(slot, V);
      for (int64_t t = 0; t < V; ++t)
        if (seen[t] > 0 && allowed(static_cast<int32_t>(t))) penalize(l[t], seen[t] - 1, rep, freq, pres);
    }
  });
}

}  // namespace afd::cpu
