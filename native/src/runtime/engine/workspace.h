// Device scratch of one step, grown to the largest batch seen (never shrunk).
#pragma once
#include <cstdint>

#include "core/backend.h"
#include "model/model-config.h"

namespace afd {

// Logits of prompt-logprob rows are computed in chunks of at most this many bytes (or of
// the sampled rows' capacity, when larger), so long prompts do not grow the workspace.
constexpr uint64_t kPromptLogitBytes = 32ull << 20;

struct Workspace {
  Workspace(Backend& backend, const ModelConfig& c) : backend(backend), config(c), act(backend.activationDtype()) {}
  // Makes room for T tokens and S sequences.
  void reserve(int64_t T, int64_t S);

  Backend& backend;
  const ModelConfig& config;
  DType act;  // the backend's activation dtype (normed, ffnOut, lastHidden)
  int64_t tokens = 0, seqs = 0;
  // Per token: hidden [T, H] f32 (residual stream); normed, ffnOut [T, H] act; qkv
  // [T, (nH + 2 nKv) D] f32; q, attn [T, nH D] f32; routerLogits [T, E] f32. (The i32
  // inputs are the engine's StepInputs.)
  Buffer hidden, normed, ffnOut, qkv, q, attn, routerLogits;
  // Per sampled row (at most one per sequence, or per padded token in graph steps; or a
  // chunk of prompt-logprob rows): last hidden [S, H] act, logits [S, V] f32.
  Buffer lastHidden, logits;
};

}  // namespace afd
