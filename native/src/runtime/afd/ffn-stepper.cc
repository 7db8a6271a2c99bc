#include "runtime/afd/ffn-stepper.h"

#include <chrono>
#include <thread>

#include "core/elapsed.h"
#include "runtime/afd/wire-stats.h"

namespace afd {

using comm::TransferKind;

namespace {
using Clock = std::chrono::steady_clock;
// Every this many steps, wire times are sampled (a synchronize after the sends).
constexpr uint64_t kWireSampleSteps = 8;
}  // namespace

FfnStepper::FfnStepper(Engine& engine, const comm::RendezvousConfig& config, FfnBlock& block, FfnExpertStage* expert,
                       bool graphsAllowed, int faultLayerDelayUs, comm::StopFlag stop)
    : engine_(engine),
      config_(config),
      block_(block),
      expert_(expert),
      faultLayerDelayUs_(faultLayerDelayUs),
      stop_(stop),
      graphs_(engine, config, graphsAllowed),
      rowOffset_(block.blockSize() + 1, 0) {}

int64_t FfnStepper::stageRows(int stage) const { return stageRowsOf(*payload_, stage); }

bool FfnStepper::run(const comm::ControlPayload& payload, std::string* by) {
  EngineStats& stats = engine_.stats();
  payload_ = &payload;
  const auto t0 = Clock::now();
  sampled_ = payload.step % kWireSampleSteps == 0;
  // Kernel choices for the block's whole step (its stages are bit-equal to one stage).
  engine_.backend().setStepRows(stageRows(0) + stageRows(1));
  stepStages_ = payload.numStages;
  if (expert_) {
    const int64_t rows[2] = {stageRows(0), stageRows(1)};
    stepStages_ = expert_->beginStep(payload, rows, by);
    if (stepStages_ == 0) return false;  // a group peer shut down
  }
  const bool graphed = graphs_.run(payload, buffers_, expert_, stepStages_, [this](int l, int s) { runLayerStage(l, s); });
  if (!graphed) {
    for (int layer = 0; layer < static_cast<int>(config_.model.numLayers); ++layer) {
      if (faultLayerDelayUs_ > 0) {
        stats.setFfnLoop(FfnLoopState::Receiving, layer, 0);
        std::this_thread::sleep_for(std::chrono::microseconds(faultLayerDelayUs_));
      }
      for (int stage = 0; stage < stepStages_; ++stage) runLayerStage(layer, stage);
    }
  }
  if (expert_) expert_->finishStep(config_.stepDeadlineMs);
  block_.data().synchronize({});
  if (expert_) expert_->noteStepDone(sampled_);
  const uint64_t us = usSince(t0);
  stats.stepsServed += 1;
  stats.steps += 1;
  stats.lastStepUs = us;
  stats.totalStepUs += us;
  return true;
}

void FfnStepper::runLayerStage(int layer, int stage) {
  EngineStats& stats = engine_.stats();
  const comm::ControlPayload& payload = *payload_;
  if (stage >= payload.numStages) {
    // A stage only other blocks of the FFN group have: join its exchange with no rows.
    stats.setFfnLoop(FfnLoopState::Computing, layer, stage);
    if (config_.model.moeLayers[layer]) expert_->joinEmptyStage(layer, stage);
    return;
  }
  stats.setFfnLoop(FfnLoopState::Receiving, layer, stage);
  rowOffset_[0] = 0;
  for (int p = 0; p < payload.numPeers; ++p) rowOffset_[p + 1] = rowOffset_[p] + payload.wireRows(p, stage);
  const int64_t rows = rowOffset_[payload.numPeers];
  // hidden, logits: [rows, H], [rows, E] concatenated in peer order; out: [rows, H].
  if (block_.devicePlane()) {
    runDeviceStage(layer, stage, rows, withLogitsAt(config_, layer));
  } else {
    runHostStage(layer, stage, rows, withLogitsAt(config_, layer));
  }
}

void FfnStepper::runHostStage(int layer, int stage, int64_t rows, bool withLogits) {
  EngineStats& stats = engine_.stats();
  comm::FfnRendezvous& link = block_.connector();
  const comm::ControlPayload& payload = *payload_;
  const int peers = payload.numPeers;
  const int64_t E = config_.model.numExperts;
  const uint32_t L = static_cast<uint32_t>(layer), S = static_cast<uint32_t>(stage);
  const size_t rowBytes = static_cast<size_t>(config_.model.hiddenSize) * config_.model.activationBytes;
  std::vector<uint8_t>& hidden = buffers_.hidden;
  std::vector<float>& logits = buffers_.logits;
  if (hidden.size() < rows * rowBytes) hidden.resize(rows * rowBytes * 2);
  if (withLogits && static_cast<int64_t>(logits.size()) < rows * E) logits.resize(rows * E * 2);
  LayerStageCounters& c = stats.at(layer, stage);
  uint64_t received = 0;
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    link.recv(p, hidden.data() + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kHidden, L, S, payload.step}, {});
    received += n * rowBytes;
    if (withLogits) {
      link.recv(p, logits.data() + rowOffset_[p] * E, n * E * 4, {TransferKind::kRouterLogits, L, S, payload.step}, {});
      received += n * E * 4;
    }
  }
  c.bytesAtoF += received;
  if (sampled_) {
    recordWire(stats, true, link.wireTime(0, false), layer, stage);
    // TCP on one host: peer 0's hidden states echo its time of an earlier output of ours.
    recordWire(stats, false, link.wireTime(0, true), layer, stage);
  }
  // out[stage] was last sent one layer ago; those sends have completed (the peers
  // answered since), so synchronize() returns at once and the buffer is free.
  link.synchronize({});
  std::vector<uint8_t>& out = buffers_.out[stage];
  if (out.size() < rows * rowBytes) out.resize(rows * rowBytes * 2);
  stats.setFfnLoop(FfnLoopState::Computing, layer, stage);
  const float* lg = withLogits ? logits.data() : nullptr;
  if (expert_ && config_.model.moeLayers[layer]) {
    expert_->runHostRows(layer, stage, payload, rowOffset_, rows, hidden.data(), lg, out.data());
  } else {
    engine_.ffnForward(layer, hidden.data(), rows, lg, out.data());
  }
  stats.setFfnLoop(FfnLoopState::Sending, layer, stage);
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    link.send(p, out.data() + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kFfnOutput, L, S, payload.step}, {});
  }
  c.bytesFtoA += static_cast<uint64_t>(rows) * rowBytes;
  if (sampled_) {
    link.synchronize({});
    recordWire(stats, false, link.wireTime(0, true), layer, stage);
  }
}

void FfnStepper::runDeviceStage(int layer, int stage, int64_t rows, bool withLogits) {
  EngineStats& stats = engine_.stats();
  Backend& be = engine_.backend();
  const comm::ControlPayload& payload = *payload_;
  const int peers = payload.numPeers;
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  const uint32_t L = static_cast<uint32_t>(layer), S = static_cast<uint32_t>(stage);
  const size_t rowBytes = static_cast<size_t>(H) * config_.model.activationBytes;
  const DType act = engine_.activationDtype();
  FfnStepBuffers& b = buffers_;
  b.hiddenDev.growTo(&be, rows * rowBytes);
  if (withLogits) b.logitsDev.growTo(&be, rows * E * 4);
  b.outDev[stage].growTo(&be, rows * rowBytes);
  if (rows > b.warmRows) b.warmRows = rows;
  char* hidden = static_cast<char*>(b.hiddenDev.data());
  char* logits = static_cast<char*>(b.logitsDev.data());
  char* out = static_cast<char*>(b.outDev[stage].data());
  comm::DataPlane& d = *block_.devicePlane();
  // Everything below is stream-ordered on the engine's stream: receives, FFN, sends.
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    d.recv(p, hidden + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kHidden, L, S, payload.step}, {});
    if (withLogits) d.recv(p, logits + rowOffset_[p] * E * 4, n * E * 4, {TransferKind::kRouterLogits, L, S, payload.step}, {});
  }
  countStageBytes(stats, config_, layer, stage, rows, withLogits);
  stats.setFfnLoop(FfnLoopState::Computing, layer, stage);
  const bool moeLayer = config_.model.moeLayers[layer];
  if (expert_ && moeLayer && expert_->onDevice()) {
    Tensor in = b.hiddenDev.view(act, {rows, H}), o = b.outDev[stage].view(act, {rows, H});
    Tensor lg = withLogits ? b.logitsDev.view(DType::F32, {rows, E}) : Tensor{};
    expert_->runDeviceRows(layer, stage, in, withLogits ? &lg : nullptr, o);
  } else if (expert_ && moeLayer) {
    // Expert parallelism over the host mesh on a device wire: the group exchange is host-staged.
    b.hidden.resize(rows * rowBytes);
    b.out[stage].resize(rows * rowBytes);
    be.copyToHost(b.hidden.data(), hidden, rows * rowBytes);
    if (withLogits) {
      b.logits.resize(static_cast<size_t>(rows * E));
      be.copyToHost(b.logits.data(), logits, rows * E * 4);
    }
    expert_->runHostRows(layer, stage, payload, rowOffset_, rows, b.hidden.data(), withLogits ? b.logits.data() : nullptr,
                         b.out[stage].data());
    be.copyToDevice(out, b.out[stage].data(), rows * rowBytes);
  } else {
    std::lock_guard<std::mutex> lock(engine_.mutex());
    Tensor in = b.hiddenDev.view(act, {rows, H}), o = b.outDev[stage].view(act, {rows, H});
    Tensor lg = withLogits ? b.logitsDev.view(DType::F32, {rows, E}) : Tensor{};
    engine_.ffnModel()->forward(layer, in, withLogits ? &lg : nullptr, o);
  }
  stats.setFfnLoop(FfnLoopState::Sending, layer, stage);
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    d.send(p, out + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kFfnOutput, L, S, payload.step}, {});
  }
}

}  // namespace afd
