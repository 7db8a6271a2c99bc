// Device scratch of one step, grown to the largest batch seen (never shrunk).
#pragma once
#include <cstdint>

#include "core/backend.h"
#include "model/model-config.h"

namespace afd {

struct Workspace {
  Workspace(Backend& backend, const ModelConfig& c) : backend(backend), config(c) {}
  // Makes room for T tokens and S sequences.
  void reserve(int64_t T, int64_t S);

  Backend& backend;
  const ModelConfig& config;
  int64_t tokens = 0, seqs = 0;
  // Per token: [T, H] f32 hidden, normed, proj, ffnOut; q/attn [T, nH*D]; k/v [T, nKv*D];
  // routerLogits [T, E]. (The i32 inputs are the engine's StepInputs.)
  Buffer hidden, normed, proj, ffnOut, q, k, v, attn, routerLogits;
  // Per sampled row (at most one per sequence, or per padded token in graph steps): last
  // hidden [S, H], logits [S, V].
  Buffer lastHidden, logits;
};

}  // namespace afd
