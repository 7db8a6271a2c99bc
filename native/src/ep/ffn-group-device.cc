// EpFfnGroup on the device exchange (epTransport peer or nccl): routing, shared experts and the
// exchange all stay on the engine's stream, so the FFN step replays as a CUDA graph.
#include <algorithm>

#include "ep/ffn-group.h"

namespace afd {

void EpFfnGroup::buildDeviceExchange(EpTransport transport, int64_t capMax, int waitDeadlineMs, comm::StopFlag stop) {
  const ModelConfig& c = ffn_.config();
  std::lock_guard<std::mutex> lock(engineMutex_);
  device_.reset();  // aborts its waits and drains the stream before its regions go
  EpDeviceShape shape;
  shape.numRanks = mesh_->numRanks();
  shape.rank = mesh_->rank();
  shape.hiddenSize = c.hiddenSize;
  shape.numExperts = static_cast<int>(c.numExperts);
  shape.topK = static_cast<int>(c.numExpertsPerTok);
  shape.numLayers = static_cast<int>(c.numLayers);
  shape.act = backend_.activationDtype();
  shape.capMax = capMax;
  shape.waitDeadlineMs = waitDeadlineMs;
  // Routing buffers for the largest stage, allocated now (never inside a capture).
  const int64_t K = shape.topK, E = shape.numExperts;
  routeIds_.growTo(&backend_, static_cast<size_t>(capMax * K) * 4);
  routeWeights_.growTo(&backend_, static_cast<size_t>(capMax * K) * 4);
  routeLogits_.growTo(&backend_, static_cast<size_t>(capMax * E) * 4);
  sharedOut_.growTo(&backend_, static_cast<size_t>(capMax * c.hiddenSize) * dtypeBytes(shape.act));
  device_ = buildEpDeviceExchange(transport, backend_, shape, *mesh_, stop);
  seen_ = EpDeviceCounters{};
  // The experts' scratch and pointer tables for stages of up to kWarmRows rows, now: an
  // allocation inside a step would wait for the device, and FFN ranks of one process
  // (the GPU suite) share one context, so it would wait for a peer that waits for us.
  constexpr int64_t kWarmRows = 256;
  for (int layer = 0; layer < static_cast<int>(c.numLayers); ++layer) {
    if (c.isMoeLayer(layer)) device_->warm(std::min(capMax, kWarmRows), ffn_.layerWeights(layer).experts);
  }
  backend_.synchronize();
}

EpFfnGroup::DeviceRoute EpFfnGroup::routeDevice(int layer, const Tensor& hidden, const Tensor* logits) {
  const ModelConfig& c = ffn_.config();
  const int64_t T = hidden.ndim == 2 ? hidden.dim(0) : 0, K = c.numExpertsPerTok, E = c.numExperts;
  DeviceRoute r{routeIds_.view(DType::I32, {T, K}), routeWeights_.view(DType::F32, {T, K}), Tensor{}, false};
  if (T == 0) return r;
  Tensor scratch = routeLogits_.view(DType::F32, {T, E});
  ffn_.route(layer, hidden, logits, scratch, r.ids, r.weights);
  if (ffn_.hasSharedExperts(layer)) {
    r.shared = sharedOut_.view(hidden.dtype, {T, c.hiddenSize});
    ffn_.sharedExperts(layer, hidden, r.shared);
    r.hasShared = true;
  }
  return r;
}

void EpFfnGroup::moeLayerDevice(int layer, int stage, const Tensor& hidden, const Tensor* logits, Tensor& out) {
  AFD_CHECK(device_ != nullptr, "expert parallelism: no device exchange (epTransport peer or nccl) was built");
  std::lock_guard<std::mutex> lock(engineMutex_);
  const DeviceRoute r = routeDevice(layer, hidden, logits);
  device_->moeLayer(layer, stage, hidden, r.ids, r.weights, r.hasShared ? &r.shared : nullptr, ffn_.layerWeights(layer).experts, out);
}

void EpFfnGroup::warmDevice(const Tensor& hidden, const Tensor* logits, int64_t cap) {
  AFD_CHECK(device_ != nullptr, "expert parallelism: no device exchange (epTransport peer or nccl) was built");
  const ModelConfig& c = ffn_.config();
  std::lock_guard<std::mutex> lock(engineMutex_);
  for (int layer = 0; layer < static_cast<int>(c.numLayers); ++layer) {
    if (!c.isMoeLayer(layer)) continue;
    routeDevice(layer, hidden, logits);
    device_->warm(cap, ffn_.layerWeights(layer).experts);
  }
}

void EpFfnGroup::refreshDeviceStats() {
  if (!device_) return;
  const ModelConfig& c = ffn_.config();
  EpDeviceCounters now;
  {
    std::lock_guard<std::mutex> lock(engineMutex_);
    now = device_->counters();
  }
  const size_t L = static_cast<size_t>(c.numLayers), E = static_cast<size_t>(c.numExperts);
  seen_.tokensPerExpert.resize(L * E, 0);
  seen_.rowsSent.resize(L, 0);
  seen_.rowsReceived.resize(L, 0);
  // Rows carry their H activations, plus K expert ids and K weights on dispatch.
  const uint64_t rowBytes = static_cast<uint64_t>(c.hiddenSize) * dtypeBytes(backend_.activationDtype());
  const uint64_t dispatchBytes = rowBytes + 8ull * c.numExpertsPerTok;
  for (size_t l = 0; l < L; ++l) {
    for (size_t e = 0; e < E; ++e) {
      const uint64_t d = now.tokensPerExpert[l * E + e] - seen_.tokensPerExpert[l * E + e];
      if (d) stats_.tokens(static_cast<int>(l), static_cast<int>(e)).fetch_add(d, std::memory_order_relaxed);
    }
    const uint64_t sent = now.rowsSent[l] - seen_.rowsSent[l], received = now.rowsReceived[l] - seen_.rowsReceived[l];
    stats_.dispatchSentBytes[l].fetch_add(sent * dispatchBytes, std::memory_order_relaxed);
    stats_.dispatchReceivedBytes[l].fetch_add(received * dispatchBytes, std::memory_order_relaxed);
    stats_.combineSentBytes[l].fetch_add(received * rowBytes, std::memory_order_relaxed);
    stats_.combineReceivedBytes[l].fetch_add(sent * rowBytes, std::memory_order_relaxed);
  }
  seen_ = std::move(now);
}

}  // namespace afd
