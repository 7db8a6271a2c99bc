// FfnExecutor: the seam between the two halves of every decoder layer. The attention
// half calls an FfnExecutor once per layer and stage; the executor runs the FFN half
// in-process (LocalFfnExecutor, model/local-ffn-executor.h: colocated) or across a
// connector (RemoteFfnExecutor, runtime/afd/remote-ffn-executor.h). Submit/collect are
// split so that, with two stages, stage 1's attention can run while stage 0's FFN round
// trip is in flight:
//   for stage s: attention(L, s); submit(L, s, ...)
//   for stage s: collect(L, s, ffnOut_s); residual add
// What crosses the seam:
//   hidden:       [T_s, H] f32, the post-attention-RMSNormed hidden states of the stage
//                 (the norm runs on the attention side, so the gate can run there too).
//   routerLogits: [T_s, E] f32, only for MoE layers when the gate runs on attention;
//                 null otherwise. With grouped routing (DeepSeek) the attention half
//                 routes too and these are the dense routing weights (0 = not chosen).
//   ffnOut:       [T_s, H] f32, the MLP / weighted-experts output, without residual.
// Tensors passed to submit stay valid and unchanged until the matching collect returns.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace afd {

// Per-step facts the executor needs before the first layer (the remote executor sends
// them as the control payload).
struct FfnStepInfo {
  std::vector<int32_t> stageTokenCounts;  // tokens per stage (1 or 2 entries)
  uint32_t flags = 0;                     // warmup / capture / replay bits (runtime-defined)
  bool sampleWire = false;                // measure this step's per-layer wire time (an eager step)
};

class FfnExecutor {
 public:
  virtual ~FfnExecutor() = default;
  // Once per step, before any layer.
  virtual void beginStep(const FfnStepInfo& info) = 0;
  virtual void submit(int layer, int stage, const Tensor& hidden, const Tensor* routerLogits) = 0;
  // Writes the FFN output of (layer, stage) into ffnOut ([T_s, H] f32, device memory).
  virtual void collect(int layer, int stage, Tensor& ffnOut) = 0;
  // Once per step, after the last layer.
  virtual void endStep() = 0;

  // CUDA graphs (runtime/engine/graph-policy.h): true when submit/collect only enqueue
  // device work on the engine's backend stream (no host sync, host copy or allocation),
  // so a decode step may be captured with them inside; beginStep/endStep always run
  // outside the captured region (FfnStepInfo.flags tells the executor it is a graph step).
  virtual bool graphSafe() const { return false; }
  // Changes when something captured work points at is replaced (e.g. a new data plane);
  // the engine then drops its graphs.
  virtual uint64_t graphEpoch() const { return 0; }
  // True when the executor measures per-layer wire time on sampled eager steps; graph
  // replays cannot, so the engine runs an eager step now and then to keep it measured.
  virtual bool samplesWireTime() const { return false; }

  // submit + collect.
  void run(int layer, int stage, const Tensor& hidden, const Tensor* routerLogits, Tensor& ffnOut) {
    submit(layer, stage, hidden, routerLogits);
    collect(layer, stage, ffnOut);
  }
};

}  // namespace afd
