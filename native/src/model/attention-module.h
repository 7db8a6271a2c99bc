// The attention module of a layer kind (model/layer-kinds.h): what sits between a
// layer's input norm and its residual add. One module per kind holds the weights of the
// layers of that kind; AttentionModel (model/attention-model.h) picks it per layer.
#pragma once
#include "core/backend.h"

namespace afd {

// Per-stage inputs of the attention half (device tensors, rows of one stage).
struct AttentionStageInputs {
  Tensor positions;    // [T_s] i32
  Tensor slotMapping;  // [T_s] i32 cache slot of each token
  AttentionBatch batch;  // tokenSeq relative to this stage's blockTables rows
  LinearAttentionBatch linear;  // gdn layers: the stage's sequences, their state slots (seqStarts stage-relative)
};

// Activations of the attention half for one stage: row views of the step workspace.
// "act" = the backend's activationDtype().
struct AttentionStageTensors {
  Tensor hidden;   // [T_s, H] f32 residual stream (in/out)
  Tensor normed;   // [T_s, H] act out: post-attention-normed hidden (what the FFN half gets)
  Tensor qkv;      // [T_s, (nH + 2 nKv) D] f32 scratch (fused projection)
  Tensor q;        // [T_s, nH, D] f32 scratch
  Tensor attn;     // [T_s, nH, D] f32 scratch
  Tensor routerLogits;  // [T_s, E] f32 out, when the layer's gate runs on attention
  Tensor ffnOut;   // [T_s, H] act: FFN output of the previous layer (added before the input norm)
};

class AttentionModule {
 public:
  virtual ~AttentionModule() = default;

  // hidden += o_proj(attention(normed)) of one layer for one stage: t.normed [T_s, H] act
  // is the input-normed hidden state, t.hidden [T_s, H] f32 the residual stream. The
  // stage's tokens are written into the layer's cache (kCache / vCache; a latent cache
  // in kCache and an empty vCache for mla) before attention reads it. gdn layers get
  // their state tensors there instead (conv state, delta-rule state), read and updated.
  virtual void forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache,
                       Tensor& vCache) = 0;
};

}  // namespace afd
