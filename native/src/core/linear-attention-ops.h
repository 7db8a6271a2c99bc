// Batch layout of the linear-attention Backend ops (the Gated DeltaNet layers of
// Qwen3-Next / Qwen3.5: a depthwise causal conv, the gated delta rule, a gated RMSNorm);
// the ops themselves are declared in core/backend.h.
//
// Unlike paged attention these layers keep a fixed-size state per sequence instead of a
// KV cache: the conv's last W - 1 inputs and the delta rule's [Hv, Dk, Dv] matrix. Both
// live in rows ("slots") of state tensors owned by the caller; a batch names each
// sequence's slot and whether it continues from it (a later prefill chunk or a decode
// step) or starts from zero (its first chunk: whatever the slot held is ignored).
#pragma once
#include "core/tensor.h"

namespace afd {

struct LinearAttentionBatch {
  Tensor seqStarts;   // [S + 1] i32 token offsets: sequence s owns tokens [seqStarts[s], seqStarts[s + 1])
  Tensor stateSlots;  // [S] i32 row of the state tensors; distinct within a batch
  Tensor hasState;    // [S] i32: 0 = start from the zero state, 1 = continue from the slot
  int numSeqs = 0;    // S
  int maxSeqLen = 0;  // longest run of tokens of one sequence (sizes device scratch)
};

}  // namespace afd
