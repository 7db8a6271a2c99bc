// Logit bias and penalties in place (the rule of core/logit-ops.h, LogitProcessing):
// bias first, then per seen token the repetition penalty, then frequency and presence.
#include "cpu/check.h"
#include "cpu/ops.h"

namespace afd::cpu {

// logits: [S, V] f32 (in place).
void processLogits(ThreadPool& pool, Tensor& logits, const LogitProcessing& p) {
  contract::checkShape("processLogits", "logits", logits, {-1, -1});
  contract::checkDType("processLogits", "logits", logits, DType::F32);
  const int64_t S = logits.dim(0), V = logits.dim(1);
  pool.parallelFor(S, 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* l = logits.ptr<float>() + r * V;
      for (int32_t i = p.biasOffsets[r]; i < p.biasOffsets[r + 1]; ++i) l[p.biasIds[i]] += p.biasValues[i];
      const float rep = p.repetition[r], freq = p.frequency[r], pres = p.presence[r];
      for (int32_t i = p.seenOffsets[r]; i < p.seenOffsets[r + 1]; ++i) {
        float& x = l[p.seenIds[i]];
        const int32_t count = p.seenCounts[i];
        x = x > 0 ? x / rep : x * rep;
        x -= freq * static_cast<float>(count);
        if (count > 0) x -= pres;
      }
    }
  });
}

}  // namespace afd::cpu
