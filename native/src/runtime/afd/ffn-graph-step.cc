// Audit of the captured region (FfnModel::forward on the CUDA backend, NCCL plane):
// receives and sends are ncclRecv / ncclSend on the engine's stream; matmul (router),
// moe (router, top-k, experts) and siluGatedMlp only launch kernels and cuBLAS GEMMs, except
// where they grow a buffer: MoeFfn::ensureScratch, DeviceMemory::scratch (synchronizes,
// then reallocates) and MoeOps::expertTables (first use of a layer: upload +
// synchronize). All three depend only on the row count of the call (and the layer), so
// a capture runs only at rows <= warmRows (every layer already ran at that many rows,
// else a local warm-up forward runs first). Any allocation after a capture changes the
// backend's allocation epoch, which drops the graphs (FfnStepGraphs::has).
#include "runtime/afd/ffn-graph-step.h"

#include <algorithm>

namespace afd {

void FfnGraphStep::drop() {
  if (graphs_) graphs_->clear();
}

void FfnGraphStep::onGathered(bool devicePlane) {
  devicePlane_ = devicePlane;
  if (devicePlane_ && !graphs_ && allowed_) graphs_ = FfnStepGraphs::create(engine_.backend());
  drop();
}

bool FfnGraphStep::run(const comm::ControlPayload& payload, FfnStepBuffers& buffers, FfnExpertStage* expert, int stepStages,
                       const std::function<void(int layer, int stage)>& enqueueStage) {
  using comm::kFlagGraphCapture;
  using comm::kFlagGraphReplay;
  EngineStats& stats = engine_.stats();
  const uint32_t flags = payload.flags;
  const bool epDevice = expert != nullptr && expert->onDevice();
  // Expert parallelism over the host mesh: eager (its exchange runs on the host). Several
  // peers: their flags are OR-merged, so eager too.
  if ((expert && !epDevice) || !devicePlane_ || !graphs_ || (flags & (kFlagGraphCapture | kFlagGraphReplay)) == 0 ||
      payload.numPeers != 1) {
    if (devicePlane_ && graphs_) stats.graphMisses += 1;
    return false;
  }
  const int layers = static_cast<int>(config_.model.numLayers);
  const int64_t rows[2] = {stageRowsOf(payload, 0), stageRowsOf(payload, 1)};
  const FfnGraphKey key{rows[0], rows[1], epDevice ? expert->cap() : 0, epDevice ? stepStages : 0};
  if ((flags & kFlagGraphReplay) && graphs_->has(key)) {
    stats.setFfnLoop(FfnLoopState::Computing, -1, -1);  // replaying: the whole step at once
    graphs_->launch(key);
    for (int l = 0; l < layers; ++l)
      for (int s = 0; s < payload.numStages; ++s) countStageBytes(stats, config_, l, s, rows[s], withLogitsAt(config_, l));
    stats.graphHits += 1;
    return true;
  }
  // Capture flag, or a replay whose graph was dropped by a buffer growth: capture now.
  bool anyLogits = false;
  for (int l = 0; l < layers; ++l) anyLogits = anyLogits || withLogitsAt(config_, l);
  const int64_t most = std::max(rows[0], rows[1]);
  Backend& be = engine_.backend();
  const size_t rowBytes = config_.model.hiddenSize * static_cast<size_t>(config_.model.activationBytes);
  buffers.hiddenDev.growTo(&be, most * rowBytes);
  if (anyLogits) buffers.logitsDev.growTo(&be, most * config_.model.numExperts * 4);
  for (int s = 0; s < payload.numStages; ++s) buffers.outDev[s].growTo(&be, rows[s] * rowBytes);
  if (most > buffers.warmRows || (epDevice && !expert->warmedForCap())) warmUp(buffers, epDevice ? expert : nullptr, most, rows, anyLogits);
  graphs_->captureAndLaunch(key, [&] {
    for (int l = 0; l < layers; ++l) {
      for (int s = 0; s < stepStages; ++s) enqueueStage(l, s);
    }
  });
  stats.graphCaptures += 1;
  stats.graphHits += 1;  // the step ran as its graph (counted as the attention side does)
  stats.setFfnLoop(FfnLoopState::Computing, -1, -1);
  return true;
}

void FfnGraphStep::warmUp(FfnStepBuffers& buffers, FfnExpertStage* expert, int64_t most,
                          const int64_t rows[2], bool anyLogits) {
  // The warm-up may move scratch, so the graphs captured so far go (allocation epoch).
  Backend& be = engine_.backend();
  const int layers = static_cast<int>(config_.model.numLayers);
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  const DType act = engine_.activationDtype();
  be.fillZero(buffers.hiddenDev.data(), most * H * config_.model.activationBytes);
  if (anyLogits) be.fillZero(buffers.logitsDev.data(), most * E * 4);
  {
    std::lock_guard<std::mutex> lock(engine_.mutex());
    for (int l = 0; l < layers; ++l) {
      if (expert && config_.model.moeLayers[l]) continue;  // this rank holds only its experts: warmed below
      Tensor in = buffers.hiddenDev.view(act, {most, H}), o = buffers.outDev[0].view(act, {rows[0], H});
      if (most != rows[0]) o = buffers.outDev[1].view(act, {rows[1], H});
      Tensor lg = withLogitsAt(config_, l) ? buffers.logitsDev.view(DType::F32, {most, E}) : Tensor{};
      engine_.ffnModel()->forward(l, in, withLogitsAt(config_, l) ? &lg : nullptr, o);
    }
  }
  if (expert) {
    Tensor in = buffers.hiddenDev.view(act, {most, H});
    Tensor lg = anyLogits ? buffers.logitsDev.view(DType::F32, {most, E}) : Tensor{};
    expert->warm(in, anyLogits ? &lg : nullptr);
  }
  be.synchronize();
  buffers.warmRows = std::max(buffers.warmRows, most);
}

}  // namespace afd
