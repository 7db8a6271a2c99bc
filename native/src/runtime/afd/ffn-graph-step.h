// The FFN role's whole step as one CUDA graph (see runtime/afd/ffn-loop.h). On a device
// wire with one attention peer, the control payload's capture flag captures the step
// keyed by its per-stage rows (and launches it once: the step crosses the wire exactly
// once, as on every other step); the replay flag replays a cached key. Several peers
// (their flags are OR-merged, so agreement cannot be told), expert parallelism over the
// host mesh and AfdConnectorOptions.ffnGraphs false run eagerly.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "comm/control-payload.h"
#include "comm/rendezvous.h"
#include "runtime/afd/ffn-expert-stage.h"
#include "runtime/afd/ffn-step-buffers.h"
#include "runtime/afd/ffn-step-graphs.h"
#include "runtime/engine/engine.h"

namespace afd {

class FfnGraphStep {
 public:
  FfnGraphStep(Engine& engine, const comm::RendezvousConfig& config, bool allowed)
      : engine_(engine), config_(config), allowed_(allowed) {}

  // Drops every graph (they point at the previous plane's or exchange's memory).
  void drop();
  // After a gathering: graphs exist only over a device plane, when allowed and capturable.
  void onGathered(bool devicePlane);
  // Runs the step as its graph when the payload asks and it can (captures first when the
  // key has none); false: run it eagerly (counted as a graph miss on a device plane).
  // enqueueStage(layer, stage) enqueues one stage of the step.
  bool run(const comm::ControlPayload& payload, FfnStepBuffers& buffers, FfnExpertStage* expert, int stepStages,
           const std::function<void(int layer, int stage)>& enqueueStage);

 private:
  // A forward of every layer at `rows` rows on zeros, off the wire, so that nothing
  // allocates or synchronizes inside the capture that follows.
  void warmUp(FfnStepBuffers& buffers, FfnExpertStage* expert, int64_t most,
              const int64_t rows[2], bool anyLogits);

  Engine& engine_;
  const comm::RendezvousConfig& config_;
  bool allowed_;
  bool devicePlane_ = false;
  std::unique_ptr<FfnStepGraphs> graphs_;  // null: eager only
};

}  // namespace afd
