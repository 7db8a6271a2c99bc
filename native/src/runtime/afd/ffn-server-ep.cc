// Expert parallelism in the FFN role's step (see ffn-server.h): the device exchange's
// bootstrap and per-step sections, and a MoE layer's stage through the group.
#include <algorithm>
#include <chrono>

#include "core/elapsed.h"
#include "runtime/afd/ffn-server.h"

namespace afd {

void AfdFfnServer::bootstrapExpertExchange() {
  if (!movesDeviceMemory(epTransport_)) return;
  if (graphs_) graphs_->clear();  // graphs point at the previous exchange's regions
  warmCap_ = 0;
  ep_->buildDeviceExchange(epTransport_, epCapMax_, std::max(1, config_.stepDeadlineMs / 2), &stop_);
  // Connector tcp stages a stage's rows through these: sized for the largest stage now,
  // so that no step allocates (see EpFfnGroup::buildDeviceExchange).
  if (!deviceWire_) {
    Backend& be = engine_->backend();
    const size_t rows = static_cast<size_t>(epCapMax_);
    hiddenDev_.growTo(&be, rows * config_.model.hiddenSize * actBytes());
    for (Buffer& out : outDev_) out.growTo(&be, rows * config_.model.hiddenSize * actBytes());
    if (config_.model.gateOnAttention) logitsDev_.growTo(&be, rows * config_.model.numExperts * 4);
  }
}

void AfdFfnServer::beginDeviceExchangeStep() {
  std::vector<uint8_t> valid[2];
  for (int s = 0; s < payload_.numStages; ++s) {
    // Row r of the stage is a token when it is below its peer's token count (an idle
    // peer's one placeholder row is not).
    for (int p = 0; p < payload_.numPeers; ++p) {
      const uint32_t rows = payload_.wireRows(p, s), tokens = payload_.tokens(p, s);
      for (uint32_t r = 0; r < rows; ++r) valid[s].push_back(r < tokens ? 1 : 0);
    }
  }
  std::lock_guard<std::mutex> lock(engine_->mutex());
  ep_->device()->beginStep(std::max<int64_t>(epCap_, 1), valid);
}

void AfdFfnServer::runExpertParallel(int layer, int stage, int64_t rows, const void* hidden, const float* logits,
                                     void* out) {
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  if (epDevice()) {
    // Host rows (connector tcp) through the device exchange: staged on the device.
    Backend& be = engine_->backend();
    const DType act = engine_->activationDtype();
    const size_t bytes = static_cast<size_t>(rows * H) * actBytes();
    hiddenDev_.growTo(&be, bytes);
    outDev_[stage].growTo(&be, bytes);
    if (logits) logitsDev_.growTo(&be, static_cast<size_t>(rows * E) * 4);
    be.copyToDevice(hiddenDev_.data(), hidden, bytes);
    if (logits) be.copyToDevice(logitsDev_.data(), logits, static_cast<size_t>(rows * E) * 4);
    Tensor in = hiddenDev_.view(act, {rows, H}), o = outDev_[stage].view(act, {rows, H});
    Tensor lg = logits ? logitsDev_.view(DType::F32, {rows, E}) : Tensor{};
    const auto t0 = SteadyClock::now();
    ep_->moeLayerDevice(layer, stage, in, logits ? &lg : nullptr, o);
    be.copyToHost(out, outDev_[stage].data(), bytes);
    engine_->stats().ffnComputeUs += usSince(t0);
    return;
  }
  // Placeholder rows (an idle peer's one row) are not routed.
  realRow_.assign(static_cast<size_t>(rows), 1);
  for (int p = 0; rows > 0 && p < payload_.numPeers; ++p) {
    if (payload_.tokens(p, stage) == 0) realRow_[rowOffset_[p]] = 0;
  }
  // Rows in the wire's activation dtype (f32 on the CPU, bf16 on CUDA); the group reads element sizes from it.
  const DType act = engine_->activationDtype();
  Tensor in(const_cast<void*>(hidden), act, {rows, H}), o(out, act, {rows, H});
  Tensor lg(const_cast<float*>(logits), DType::F32, {rows, E});
  const auto t0 = SteadyClock::now();
  ep_->moeLayer(layer, stage, in, logits ? &lg : nullptr, realRow_, o, &stop_);
  engine_->stats().ffnComputeUs += usSince(t0);
}

}  // namespace afd
