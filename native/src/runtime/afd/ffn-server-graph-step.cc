// The FFN role's step as one CUDA graph (see ffn-server.h, runGraphStep).
//
// Audit of the captured region (FfnModel::forward on the CUDA backend, NCCL plane):
// receives and sends are ncclRecv / ncclSend on the engine's stream; matmul (router),
// moe (router, top-k, experts) and siluGatedMlp only launch kernels and cuBLAS GEMMs, except
// where they grow a buffer: FfnModel::ensureScratch, DeviceMemory::scratch (synchronizes,
// then reallocates) and MoeOps::expertTables (first use of a layer: upload +
// synchronize). All three depend only on the row count of the call (and the layer), so
// a capture runs only at rows <= warmRows_ (every layer already ran at that many rows,
// else a local warm-up forward runs first). Any allocation after a capture changes the
// backend's allocation epoch, which drops the graphs (FfnStepGraphs::has).
#include <algorithm>

#include "runtime/afd/ffn-server.h"

namespace afd {

int64_t AfdFfnServer::stageRows(int stage) const {
  if (stage >= payload_.numStages) return 0;
  int64_t rows = 0;
  for (int p = 0; p < payload_.numPeers; ++p) rows += payload_.wireRows(p, stage);
  return rows;
}

void AfdFfnServer::countStageBytes(int layer, int stage, int64_t rows, bool withLogits) {
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  LayerStageCounters& c = engine_->stats().at(layer, stage);
  const uint64_t hiddenBytes = static_cast<uint64_t>(rows * H) * actBytes();
  c.bytesAtoF += hiddenBytes + static_cast<uint64_t>(withLogits ? rows * E * 4 : 0);
  c.bytesFtoA += hiddenBytes;
}

void AfdFfnServer::noteEagerStep() {
  if (devicePlane_ && graphs_) engine_->stats().graphMisses += 1;
}

void AfdFfnServer::growDeviceBuffers(int64_t maxStageRows, const int64_t rows[2], bool anyLogits) {
  Backend& be = engine_->backend();
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  hiddenDev_.growTo(&be, maxStageRows * H * actBytes());
  if (anyLogits) logitsDev_.growTo(&be, maxStageRows * E * 4);
  for (int s = 0; s < payload_.numStages; ++s) outDev_[s].growTo(&be, rows[s] * H * actBytes());
}

bool AfdFfnServer::runGraphStep() {
  using comm::kFlagGraphCapture;
  using comm::kFlagGraphReplay;
  const uint32_t flags = payload_.flags;
  // Expert parallelism over the host mesh: eager (its exchange runs on the host).
  if ((ep_ && !epDevice()) || !devicePlane_ || !graphs_ || (flags & (kFlagGraphCapture | kFlagGraphReplay)) == 0) return false;
  if (payload_.numPeers != 1) return false;  // OR-merged flags of several peers: eager (see the header)
  EngineStats& stats = engine_->stats();
  const int layers = static_cast<int>(config_.model.numLayers);
  const int64_t rows[2] = {stageRows(0), stageRows(1)};
  const bool epDev = epDevice();
  const FfnGraphKey key{rows[0], rows[1], epDev ? epCap_ : 0, epDev ? stepStages_ : 0};
  auto logitsAt = [&](int layer) { return config_.model.gateOnAttention && config_.model.moeLayers[layer]; };
  if ((flags & kFlagGraphReplay) && graphs_->has(key)) {
    stats.setFfnLoop(FfnLoopState::Computing, -1, -1);  // replaying: the whole step at once
    graphs_->launch(key);
    for (int l = 0; l < layers; ++l)
      for (int s = 0; s < payload_.numStages; ++s) countStageBytes(l, s, rows[s], logitsAt(l));
    stats.graphHits += 1;
    return true;
  }
  // Capture flag, or a replay whose graph was dropped by a buffer growth: capture now.
  bool anyLogits = false;
  for (int l = 0; l < layers; ++l) anyLogits = anyLogits || logitsAt(l);
  const int64_t most = std::max(rows[0], rows[1]);
  growDeviceBuffers(most, rows, anyLogits);
  if (most > warmRows_ || (epDev && epCap_ > warmCap_)) {
    // Warm-up forward of every layer at this many rows on zeros, off the wire, so that
    // nothing allocates or synchronizes inside the capture; it may move scratch, so the
    // graphs captured so far go.
    Backend& be = engine_->backend();
    const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
    const DType act = engine_->activationDtype();
    be.fillZero(hiddenDev_.data(), most * H * actBytes());
    if (anyLogits) be.fillZero(logitsDev_.data(), most * E * 4);
    {
      std::lock_guard<std::mutex> lock(engine_->mutex());
      for (int l = 0; l < layers; ++l) {
        if (epDev && config_.model.moeLayers[l]) continue;  // this rank holds only its experts: warmed below
        Tensor in = hiddenDev_.view(act, {most, H}), o = outDev_[0].view(act, {rows[0], H});
        if (most != rows[0]) o = outDev_[1].view(act, {rows[1], H});
        Tensor lg = logitsAt(l) ? logitsDev_.view(DType::F32, {most, E}) : Tensor{};
        engine_->ffnModel()->forward(l, in, logitsAt(l) ? &lg : nullptr, o);
      }
    }
    if (epDev) {
      Tensor in = hiddenDev_.view(act, {most, H});
      Tensor lg = anyLogits ? logitsDev_.view(DType::F32, {most, E}) : Tensor{};
      ep_->warmDevice(in, anyLogits ? &lg : nullptr, epCap_);
      warmCap_ = std::max(warmCap_, epCap_);
    }
    be.synchronize();
    warmRows_ = std::max(warmRows_, most);
  }
  graphs_->captureAndLaunch(key, [&] {
    for (int l = 0; l < layers; ++l) {
      for (int s = 0; s < stepStages_; ++s) runLayerStage(l, s);
    }
  });
  stats.graphCaptures += 1;
  stats.graphHits += 1;  // the step ran as its graph (counted as the attention side does)
  stats.setFfnLoop(FfnLoopState::Computing, -1, -1);
  return true;
}

}  // namespace afd
