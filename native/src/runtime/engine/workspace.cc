#include "runtime/engine/workspace.h"

#include <algorithm>

namespace afd {

void Workspace::reserve(int64_t T, int64_t S) {
  const int64_t H = config.hiddenSize, qDim = config.numHeads * config.headDim, kvDim = config.numKvHeads * config.headDim;
  const size_t f = sizeof(float), a = dtypeBytes(act);
  if (T > tokens) {
    const int64_t n = std::max<int64_t>(T, tokens * 2);
    hidden = Buffer(&backend, n * H * f);
    normed = Buffer(&backend, n * H * a);
    ffnOut = Buffer(&backend, n * H * a);
    qkv = Buffer(&backend, n * (qDim + 2 * kvDim) * f);
    q = Buffer(&backend, n * qDim * f);
    attn = Buffer(&backend, n * qDim * f);
    routerLogits = Buffer(&backend, n * std::max(1, config.numExperts) * f);
    tokens = n;
  }
  if (S > seqs) {
    const int64_t n = std::max<int64_t>(S, seqs * 2);
    lastHidden = Buffer(&backend, n * H * a);
    logits = Buffer(&backend, n * config.vocabSize * f);
    seqs = n;
  }
}

}  // namespace afd
