// The FFN role's grow-only step buffers (runtime/afd/ffn-stepper.h): a stage's rows as they
// arrive from the block's peers, concatenated in peer order, and the FFN half's output.
// Host buffers serve connector tcp (and host-staged expert parallelism), device buffers
// the device connectors; all hold the activation dtype, router logits f32. Also the row
// counts and byte counters the eager step and the graph step (ffn-graph-step.h) share.
#pragma once
#include <cstdint>
#include <vector>

#include "comm/control-payload.h"
#include "comm/rendezvous.h"
#include "core/backend.h"
#include "runtime/engine/stats.h"

namespace afd {

struct FfnStepBuffers {
  // Host: hidden / out [rows, H] in the activation dtype (bytes), logits [rows, E].
  std::vector<uint8_t> hidden, out[comm::kMaxStages];
  std::vector<float> logits;
  // Device: hidden [rows, H], logits [rows, E] f32, out [rows, H] per stage.
  Buffer hiddenDev, logitsDev, outDev[comm::kMaxStages];
  // Most rows any FFN forward has run at (the backend's scratch is sized for it).
  int64_t warmRows = 0;
};

// Rows of `stage` summed over the block's peers (0 for a stage the block does not have).
inline int64_t stageRowsOf(const comm::ControlPayload& payload, int stage) {
  if (stage >= payload.numStages) return 0;
  int64_t rows = 0;
  for (int p = 0; p < payload.numPeers; ++p) rows += payload.wireRows(p, stage);
  return rows;
}

// Layer `layer` receives router logits with its hidden rows (gate on attention, MoE layer).
inline bool withLogitsAt(const comm::RendezvousConfig& config, int layer) {
  return config.model.gateOnAttention && config.model.moeLayers[layer];
}

// A device stage's connector bytes: hidden (+ logits) in, hidden out.
inline void countStageBytes(EngineStats& stats, const comm::RendezvousConfig& config, int layer, int stage, int64_t rows,
                            bool withLogits) {
  const int64_t H = config.model.hiddenSize, E = config.model.numExperts;
  LayerStageCounters& c = stats.at(layer, stage);
  const uint64_t hiddenBytes = static_cast<uint64_t>(rows * H) * config.model.activationBytes;
  c.bytesAtoF += hiddenBytes + static_cast<uint64_t>(withLogits ? rows * E * 4 : 0);
  c.bytesFtoA += hiddenBytes;
}

}  // namespace afd
