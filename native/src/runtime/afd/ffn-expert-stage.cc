#include "runtime/afd/ffn-expert-stage.h"

#include <algorithm>
#include <chrono>

#include "core/elapsed.h"

namespace afd {

FfnExpertStage::FfnExpertStage(EpFfnGroup& group, Engine& engine, const comm::RendezvousConfig& config, EpTransport transport,
                               int64_t capMax, bool deviceWire, comm::StopFlag stop)
    : group_(group), engine_(engine), config_(config), transport_(transport), capMax_(capMax), deviceWire_(deviceWire), stop_(stop) {}

void FfnExpertStage::bootstrap() {
  if (!movesDeviceMemory(transport_)) return;
  warmCap_ = 0;
  group_.buildDeviceExchange(transport_, capMax_, std::max(1, config_.stepDeadlineMs / 2), stop_);
  // Connector tcp stages a stage's rows through these: sized for the largest stage now,
  // so that no step allocates (see EpFfnGroup::buildDeviceExchange).
  if (!deviceWire_) {
    Backend& be = engine_.backend();
    const size_t rowBytes = config_.model.hiddenSize * static_cast<size_t>(config_.model.activationBytes);
    const size_t rows = static_cast<size_t>(capMax_);
    hiddenDev_.growTo(&be, rows * rowBytes);
    for (Buffer& out : outDev_) out.growTo(&be, rows * rowBytes);
    if (config_.model.gateOnAttention) logitsDev_.growTo(&be, rows * config_.model.numExperts * 4);
  }
}

int FfnExpertStage::beginStep(const comm::ControlPayload& payload, const int64_t stageRows[2], std::string* by) {
  // Every FFN rank runs as many stages as the group's largest step (stage by stage), with
  // sections as large as the group's largest stage.
  const int stages = group_.mesh().beginStep(payload.numStages, by, stageRows, &cap_);
  if (stages == 0) return 0;
  group_.stats().groupSteps.fetch_add(1, std::memory_order_relaxed);
  if (!onDevice()) return stages;
  std::vector<uint8_t> valid[2];
  for (int s = 0; s < payload.numStages; ++s) {
    // Row r of the stage is a token when it is below its peer's token count (an idle
    // peer's one placeholder row is not).
    for (int p = 0; p < payload.numPeers; ++p) {
      const uint32_t rows = payload.wireRows(p, s), tokens = payload.tokens(p, s);
      for (uint32_t r = 0; r < rows; ++r) valid[s].push_back(r < tokens ? 1 : 0);
    }
  }
  std::lock_guard<std::mutex> lock(engine_.mutex());
  group_.device()->beginStep(std::max<int64_t>(cap_, 1), valid);
  return stages;
}

void FfnExpertStage::finishStep(int stepDeadlineMs) {
  if (!onDevice()) return;
  // The group's device waits end on their own deadline; a group peer whose link closed ends them now.
  group_.device()->finishStep(comm::Deadline::afterMs(stepDeadlineMs), stop_, [this] { return group_.mesh().closedPeer(); });
}

void FfnExpertStage::noteStepDone(bool sampled) {
  if (sampled && onDevice()) group_.refreshDeviceStats();
}

void FfnExpertStage::runHostRows(int layer, int stage, const comm::ControlPayload& payload, const std::vector<int64_t>& rowOffset,
                                 int64_t rows, const void* hidden, const float* logits, void* out) {
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  const DType act = engine_.activationDtype();
  if (onDevice()) {
    // Host rows (connector tcp) through the device exchange: staged on the device.
    Backend& be = engine_.backend();
    const size_t bytes = static_cast<size_t>(rows * H) * dtypeBytes(act);
    hiddenDev_.growTo(&be, bytes);
    outDev_[stage].growTo(&be, bytes);
    if (logits) logitsDev_.growTo(&be, static_cast<size_t>(rows * E) * 4);
    be.copyToDevice(hiddenDev_.data(), hidden, bytes);
    if (logits) be.copyToDevice(logitsDev_.data(), logits, static_cast<size_t>(rows * E) * 4);
    Tensor in = hiddenDev_.view(act, {rows, H}), o = outDev_[stage].view(act, {rows, H});
    Tensor lg = logits ? logitsDev_.view(DType::F32, {rows, E}) : Tensor{};
    const auto t0 = SteadyClock::now();
    group_.moeLayerDevice(layer, stage, in, logits ? &lg : nullptr, o);
    be.copyToHost(out, outDev_[stage].data(), bytes);
    engine_.stats().ffnComputeUs += usSince(t0);
    return;
  }
  // Placeholder rows (an idle peer's one row) are not routed.
  realRow_.assign(static_cast<size_t>(rows), 1);
  for (int p = 0; rows > 0 && p < payload.numPeers; ++p) {
    if (payload.tokens(p, stage) == 0) realRow_[rowOffset[p]] = 0;
  }
  // Rows in the wire's activation dtype (f32 on the CPU, bf16 on CUDA); the group reads element sizes from it.
  Tensor in(const_cast<void*>(hidden), act, {rows, H}), o(out, act, {rows, H});
  Tensor lg(const_cast<float*>(logits), DType::F32, {rows, E});
  const auto t0 = SteadyClock::now();
  group_.moeLayer(layer, stage, in, logits ? &lg : nullptr, realRow_, o, stop_);
  engine_.stats().ffnComputeUs += usSince(t0);
}

void FfnExpertStage::runDeviceRows(int layer, int stage, const Tensor& hidden, const Tensor* logits, Tensor& out) {
  group_.moeLayerDevice(layer, stage, hidden, logits, out);
}

void FfnExpertStage::joinEmptyStage(int layer, int stage) {
  if (onDevice()) {
    Tensor none, out;
    group_.moeLayerDevice(layer, stage, none, nullptr, out);
    return;
  }
  const std::vector<int64_t> noOffsets;
  runHostRows(layer, stage, comm::ControlPayload{}, noOffsets, 0, nullptr, nullptr, nullptr);
}

void FfnExpertStage::warm(const Tensor& hidden, const Tensor* logits) {
  group_.warmDevice(hidden, logits, cap_);
  warmCap_ = std::max(warmCap_, cap_);
}

}  // namespace afd
