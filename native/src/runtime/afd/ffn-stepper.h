// One step of the FFN role (runtime/afd/ffn-loop.h): for every layer and stage, receive
// the block's rows from every peer, concatenate them along tokens, run the engine's FFN
// half (a MoE layer through the FFN group with expert parallelism), split the output and
// send each peer its slice; count bytes and wire times. Over a device connector the step
// is stream work on the engine's stream and may run as one CUDA graph (ffn-graph-step.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/control-payload.h"
#include "comm/rendezvous.h"
#include "runtime/afd/ffn-block.h"
#include "runtime/afd/ffn-expert-stage.h"
#include "runtime/afd/ffn-graph-step.h"
#include "runtime/afd/ffn-step-buffers.h"
#include "runtime/engine/engine.h"

namespace afd {

class FfnStepper {
 public:
  // expert: the FFN group's part, null without expert parallelism. graphsAllowed:
  // AfdConnectorOptions.ffnGraphs. faultLayerDelayUs: fault tests only (a host pause
  // before each eagerly served layer, so a kill lands inside the attention rank's layer loop).
  FfnStepper(Engine& engine, const comm::RendezvousConfig& config, FfnBlock& block, FfnExpertStage* expert,
             bool graphsAllowed, int faultLayerDelayUs, comm::StopFlag stop);

  // Before each gathering: the step graphs over the previous plane or exchange go.
  void dropGraphs() { graphs_.drop(); }
  // After each gathering: step graphs for the new device plane (when allowed).
  void onGathered() { graphs_.onGathered(block_.devicePlane() != nullptr); }
  // Runs the step `payload` announced; false when a group peer shut down (*by names it).
  bool run(const comm::ControlPayload& payload, std::string* by);

 private:
  void runLayerStage(int layer, int stage);
  // A stage over the TCP connector: host rows.
  void runHostStage(int layer, int stage, int64_t rows, bool withLogits);
  // A stage over the device plane: receive into device rows, run the FFN half on the
  // engine's stream, send each peer its slice.
  void runDeviceStage(int layer, int stage, int64_t rows, bool withLogits);
  int64_t stageRows(int stage) const;

  Engine& engine_;
  const comm::RendezvousConfig& config_;
  FfnBlock& block_;
  FfnExpertStage* expert_;
  int faultLayerDelayUs_;
  comm::StopFlag stop_;
  FfnGraphStep graphs_;
  FfnStepBuffers buffers_;
  const comm::ControlPayload* payload_ = nullptr;  // the step being run
  int stepStages_ = 1;            // stages of this step: the block's, or the FFN group's largest
  bool sampled_ = false;          // this step samples wire times
  std::vector<int64_t> rowOffset_;  // [peers + 1] row offsets of the current stage
};

}  // namespace afd
