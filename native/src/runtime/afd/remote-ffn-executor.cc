#include "runtime/afd/remote-ffn-executor.h"

#include "comm/comm-error.h"
#include "core/error.h"
#include "runtime/afd/wire-stats.h"

namespace afd {

using comm::TransferKind;

RemoteFfnExecutor::RemoteFfnExecutor(comm::AttentionControlPlane& control, comm::DataPlane& data,
                                     const comm::ModelShape& model, Backend& backend, EngineStats& stats)
    : control_(control), data_(&data), model_(model), backend_(backend), stats_(stats) {
  zeroHidden_.assign(rowBytes(), 0);
  zeroLogits_.assign((model_.numExperts > 0 ? model_.numExperts : 1) * sizeof(float), 0);
  sink_.assign(rowBytes(), 0);
  localRows_.assign(comm::kMaxStages, 0);
}

void RemoteFfnExecutor::setDataPlane(comm::DataPlane& data) {
  data_ = &data;
  ++planeEpoch_;
}

void RemoteFfnExecutor::ensureDevicePlaceholders() {
  if (zeroHiddenDev_.data() != nullptr) return;
  const size_t h = rowBytes(), e = zeroLogits_.size();
  zeroHiddenDev_ = Buffer(&backend_, h);
  zeroLogitsDev_ = Buffer(&backend_, e);
  sinkDev_ = Buffer(&backend_, h);
  backend_.fillZero(zeroHiddenDev_.data(), h);
  backend_.fillZero(zeroLogitsDev_.data(), e);
}

const void* RemoteFfnExecutor::toHost(const Tensor& t, std::vector<uint8_t>& staging) {
  if (backend_.sharesHostMemory() || deviceWire()) return t.data;
  staging.resize(t.bytes());
  backend_.copyToHost(staging.data(), t.data, t.bytes());
  return staging.data();
}

void RemoteFfnExecutor::beginStep(const FfnStepInfo& info) {
  const int n = static_cast<int>(info.stageTokenCounts.size());
  AFD_CHECK(n >= 1 && n <= comm::kMaxStages, "a step has 1 or 2 stages, got " << n);
  uint32_t tokens[comm::kMaxStages] = {0, 0};
  for (int s = 0; s < n; ++s) {
    tokens[s] = static_cast<uint32_t>(info.stageTokenCounts[s]);
    localRows_[s] = info.stageTokenCounts[s];
  }
  control_.beginStep(tokens, n, info.flags, &merged_);
  localStages_ = n;
  const bool graphStep = (info.flags & (comm::kFlagGraphCapture | comm::kFlagGraphReplay)) != 0;
  // A graph step's submit/collect are recorded once and replayed: no sampled flush inside.
  sampled_ = !graphStep && (info.sampleWire || merged_.step % kWireSampleSteps == 0);
  data_->setSampling(sampled_);
  if ((info.flags & comm::kFlagGraphReplay) != 0) countReplayedBytes();
  AFD_CHECK(!graphStep || merged_.numStages == n,
            "CUDA graph step: the block runs " << merged_.numStages << " stages but this rank captured " << n
                                               << " (another attention rank joined the block); set cudaGraph.policy \"off\"");
}

void RemoteFfnExecutor::countReplayedBytes() {
  // A replay runs the captured submit/collect without calling them: count their bytes here.
  for (uint32_t layer = 0; layer < model_.numLayers; ++layer) {
    const bool logits = model_.gateOnAttention && model_.moeLayers[layer];
    for (int s = 0; s < localStages_; ++s) {
      const uint64_t rows = static_cast<uint64_t>(localRows_[s]);
      LayerStageCounters& c = stats_.at(static_cast<int>(layer), s);
      c.bytesAtoF += rows * rowBytes() + (logits ? rows * model_.numExperts * sizeof(float) : 0);
      c.bytesFtoA += rows * rowBytes();
    }
  }
}

void RemoteFfnExecutor::sendRows(int layer, int stage, const void* hidden, const void* logits, int64_t rows) {
  const size_t hiddenBytes = static_cast<size_t>(rows) * rowBytes();
  const size_t logitBytes = logits ? static_cast<size_t>(rows) * model_.numExperts * sizeof(float) : 0;
  data_->send(0, hidden, hiddenBytes, tag(TransferKind::kHidden, layer, stage), {});
  if (logits) data_->send(0, logits, logitBytes, tag(TransferKind::kRouterLogits, layer, stage), {});
  LayerStageCounters& c = stats_.at(layer, stage);
  c.bytesAtoF += hiddenBytes + logitBytes;
  if (sampled_) {
    syncData();
    recordWire(stats_, true, data_->wireTime(0, true), layer, stage);
  }
}

void RemoteFfnExecutor::sendPlaceholder(int layer, int stage) {
  const bool logits = model_.gateOnAttention && model_.moeLayers[layer];
  if (deviceWire()) {
    ensureDevicePlaceholders();
    sendRows(layer, stage, zeroHiddenDev_.data(), logits ? zeroLogitsDev_.data() : nullptr, 1);
    return;
  }
  sendRows(layer, stage, zeroHidden_.data(), logits ? zeroLogits_.data() : nullptr, 1);
}

void RemoteFfnExecutor::recvPlaceholder(int layer, int stage) {
  const size_t bytes = rowBytes();
  if (deviceWire()) ensureDevicePlaceholders();
  data_->recv(0, deviceWire() ? sinkDev_.data() : sink_.data(), bytes, tag(TransferKind::kFfnOutput, layer, stage), {});
  stats_.at(layer, stage).bytesFtoA += bytes;
}

void RemoteFfnExecutor::submit(int layer, int stage, const Tensor& hidden, const Tensor* routerLogits) {
  const bool wantLogits = model_.gateOnAttention && model_.moeLayers[layer];
  AFD_CHECK((routerLogits != nullptr) == wantLogits,
            "layer " << layer << ": router logits " << (wantLogits ? "missing" : "unexpected")
                     << " for the gate placement agreed with the FFN rank");
  const int64_t rows = hidden.ndim ? hidden.dim(0) : 0;
  if (rows == 0) {
    sendPlaceholder(layer, stage);
  } else {
    const void* h = toHost(hidden, stageHidden_[stage]);
    const void* l = routerLogits ? toHost(*routerLogits, stageLogits_[stage]) : nullptr;
    sendRows(layer, stage, h, l, rows);
  }
  // Stages the block runs that this rank does not have cross as placeholders.
  if (stage == localStages_ - 1) {
    for (int extra = localStages_; extra < merged_.numStages; ++extra) sendPlaceholder(layer, extra);
  }
}

void RemoteFfnExecutor::collect(int layer, int stage, Tensor& ffnOut) {
  const int64_t rows = ffnOut.ndim ? ffnOut.dim(0) : 0;
  if (rows == 0) {
    recvPlaceholder(layer, stage);
  } else {
    const size_t bytes = static_cast<size_t>(rows) * rowBytes();
    AFD_CHECK(ffnOut.bytes() == bytes, "FFN output of layer " << layer << " is " << dtypeName(ffnOut.dtype) << " "
                                                              << ffnOut.shapeString() << ", the wire carries "
                                                              << model_.activationBytes << "-byte activations");
    void* dst = ffnOut.data;
    const bool staged = !backend_.sharesHostMemory() && !deviceWire();
    if (staged) {
      stageOut_.resize(bytes);
      dst = stageOut_.data();
    }
    data_->recv(0, dst, bytes, tag(TransferKind::kFfnOutput, layer, stage), {});
    if (staged) backend_.copyToDevice(ffnOut.data, dst, bytes);
    LayerStageCounters& c = stats_.at(layer, stage);
    c.bytesFtoA += bytes;
    if (sampled_) {
      syncData();  // device planes: the receive's timing events must have completed
      recordWire(stats_, false, data_->wireTime(0, false), layer, stage);
      // TCP: the FFN rank's time of this layer's send comes back with its answer (or the
      // answer ends the round trip): only now is A->F known. It is tagged with its
      // transfer; a device plane's untagged send span was stored by sendRows.
      const comm::WireTime sent = data_->wireTime(0, true);
      if (sent.tagged) recordWire(stats_, true, sent, layer, stage);
    }
  }
  if (stage == localStages_ - 1) {
    for (int extra = localStages_; extra < merged_.numStages; ++extra) recvPlaceholder(layer, extra);
  }
}

void RemoteFfnExecutor::endStep() { syncData(); }

void RemoteFfnExecutor::syncData() {
  try {
    data_->synchronize({});
  } catch (const comm::CommError& e) {
    // A device plane learns only that the FFN rank's connection closed; the FFN rank may
    // have said why first (it left because an FFN rank of its group failed): say that.
    if (e.kind() != comm::CommErrorKind::kPeerClosed) throw;
    const std::string why = control_.pendingGoodbye();
    if (why.empty()) throw;
    throw comm::CommError(comm::CommErrorKind::kPeerClosed, why + "; it closed its connection during the step, the GPU data plane was aborted and the step failed");
  }
}

void RemoteFfnExecutor::runEmptyStep() {
  uint32_t none[1] = {0};
  control_.beginStep(none, 1, 0, &merged_);
  localStages_ = 0;
  sampled_ = false;
  for (uint32_t layer = 0; layer < model_.numLayers; ++layer) {
    for (int s = 0; s < merged_.numStages; ++s) sendPlaceholder(static_cast<int>(layer), s);
    for (int s = 0; s < merged_.numStages; ++s) recvPlaceholder(static_cast<int>(layer), s);
  }
  syncData();
}

}  // namespace afd
