#include "runtime/afd/ffn-server.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/elapsed.h"
#include "ep/options.h"
#include "runtime/afd/device-plane.h"

namespace afd {

using comm::CommError;
using comm::CommErrorKind;
using comm::TransferKind;

namespace {
using Clock = std::chrono::steady_clock;
constexpr uint64_t kWireSampleSteps = 8;

std::shared_ptr<Engine> requireFfnEngine(std::shared_ptr<Engine> engine) {
  AFD_CHECK(engine && engine->ffnModel() != nullptr && engine->info().role == "ffn",
            "an FFN server needs an engine loaded with role ffn (this one is "
                << (engine ? engine->info().role : std::string("missing")) << ")");
  return engine;
}
}  // namespace

const char* AfdFfnServer::stateName(State s) {
  switch (s) {
    case State::kCreated: return "created";
    case State::kRendezvous: return "rendezvous";
    case State::kServing: return "serving";
    case State::kStopped: return "stopped";
    case State::kFailed: return "failed";
  }
  return "unknown";
}

AfdFfnServer::AfdFfnServer(std::shared_ptr<Engine> engine, const AfdConnectorOptions& options)
    : engine_(requireFfnEngine(std::move(engine))),
      config_(makeConnectorConfig(options, engine_->config(), engine_->computeGateOnAttention(), engine_->activationDtype())),
      connector_(config_),
      connectorKind_(options.connector),
      maxStepTokens_(options.maxStepTokens),
      deviceWire_(movesDeviceMemory(options.connector)),
      graphsAllowed_(options.ffnGraphs),
      faultLayerDelayUs_(options.faultLayerDelayUs) {
  requireConnectorBackend(options.connector, engine_->backend(), "FFN");
  rowOffset_.assign(connector_.blockSize() + 1, 0);
  if (expertParallelOn(options, config_)) {
    const int64_t maxRows = static_cast<int64_t>(std::max(options.maxStepTokens, 1 << 16)) * config_.topology.maxBlockSize();
    ep_ = std::make_unique<EpFfnGroup>(*engine_->ffnModel(), engine_->mutex(), epMeshConfig(config_, options, engine_->config()),
                                       maxRows);
    epTransport_ = epTransportOf(options, config_);
    // A stage brings at most maxStepTokens rows from each attention rank of the largest block.
    epCapMax_ = static_cast<int64_t>(std::max(options.maxStepTokens, 1)) * config_.topology.maxBlockSize();
    AFD_CHECK(!movesDeviceMemory(epTransport_) || !engine_->backend().sharesHostMemory(),
              "epTransport " << nameOf(epTransport_) << " moves device memory between the FFN ranks: load the FFN engine with --backend cuda "
                             "(it runs on " << engine_->backend().name() << "), or use epTransport tcp");
  }
}

AfdFfnServer::~AfdFfnServer() { stop(); }

void AfdFfnServer::start() {
  std::lock_guard<std::mutex> lock(mu_);
  AFD_CHECK(state_ == State::kCreated, "FfnServer.start(): the server was already started");
  state_ = State::kRendezvous;
  thread_ = std::thread([this] { loop(); });
}

void AfdFfnServer::setState(State s) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = s;
  cv_.notify_all();
}

void AfdFfnServer::finish(State s, const std::string& reason) {
  engine_->stats().setFfnLoop(FfnLoopState::Idle);
  connector_.closeListener();
  if (ep_) {
    // The group cannot step without this rank: a shutdown stops it too, anything else fails its step.
    if (s == State::kStopped && reason.rfind("shutdown requested by", 0) == 0) {
      ep_->mesh().notifyShutdown("FFN rank " + std::to_string(config_.rank) + " " + reason);
    } else {
      ep_->mesh().close("FFN rank " + std::to_string(config_.rank) + " " + reason);
    }
    ep_->mesh().closeListener();
  }
  std::lock_guard<std::mutex> lock(mu_);
  state_ = s;
  exitReason_ = reason;
  if (s == State::kFailed) lastError_ = reason;
  if (!ready_) {
    ready_ = true;
    readyError_ = reason;
  }
  exited_ = true;
  cv_.notify_all();
}

void AfdFfnServer::waitReady() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return ready_; });
  if (!readyError_.empty()) throw Error(readyError_);
}

std::string AfdFfnServer::waitExit() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return exited_ || state_ == State::kCreated; });
  return exitReason_;
}

void AfdFfnServer::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  connector_.closeListener();
  std::lock_guard<std::mutex> lock(mu_);
  if (!exited_) {
    exited_ = true;
    exitReason_ = "stopped";
    state_ = State::kStopped;
    if (!ready_) {
      ready_ = true;
      readyError_ = "stopped before the attention ranks joined";
    }
    cv_.notify_all();
  }
}

AfdFfnServer::Snapshot AfdFfnServer::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot s;
  s.state = state_;
  s.peersJoined = connector_.peersJoined();
  s.blockSize = connector_.blockSize();
  s.firstAttentionRank = connector_.block().start;
  s.listenAddress = connector_.listenAddress();
  s.lastError = lastError_;
  s.peerLosses = peerLosses_;
  s.exitReason = exitReason_;
  return s;
}

void AfdFfnServer::bootstrapDevicePlane() {
  if (!deviceWire_) return;
  if (graphs_) graphs_->clear();
  devicePlane_.reset();
  DevicePlaneExchange exchange;
  exchange.send = [this](int p, const std::vector<uint8_t>& blob) { connector_.sendBootstrap(p, blob); };
  // The reply comes once the attention rank has mapped this rank's inboxes (CUDA IPC, peer access): allow for that.
  exchange.recv = [this](int p) { return connector_.recvBootstrapReply(p, std::max(config_.stepDeadlineMs, 30000)); };
  devicePlane_ = buildDevicePlane(connectorKind_, engine_->backend(), true, connector_.blockSize(),
                                  devicePlaneOptions(config_, maxStepTokens_), exchange,
                                  "FFN rank " + std::to_string(config_.rank));
  // Graphs captured on the previous plane point at its communicators: start over.
  if (!graphs_ && graphsAllowed_) graphs_ = FfnStepGraphs::create(engine_->backend());
  if (graphs_) graphs_->clear();
}

void AfdFfnServer::rendezvous(int timeoutMs) {
  std::function<void()> formGroup;
  if (ep_) {
    formGroup = [this, timeoutMs] {
      ep_->mesh().form(&stop_, timeoutMs);
      bootstrapExpertExchange();  // right after the formation, where every group peer is too
    };
  }
  connector_.acceptPeers(&stop_, timeoutMs, formGroup);
  bootstrapDevicePlane();
}

void AfdFfnServer::loop() {
  try {
    rendezvous(-1);
  } catch (const CommError& e) {
    // Peers that joined (the FFN group may have failed after the block did) learn why at once.
    connector_.closePeers(std::string("FFN rank ") + std::to_string(config_.rank) + ": " + e.what());
    finish(e.kind() == CommErrorKind::kStopped ? State::kStopped : State::kFailed, e.what());
    return;
  } catch (const std::exception& e) {
    connector_.closePeers(std::string("FFN rank ") + std::to_string(config_.rank) + " failed: " + e.what());
    finish(State::kFailed, e.what());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
    state_ = State::kServing;
    cv_.notify_all();
  }
  for (;;) {
    try {
      std::string by;
      const bool shutdown = serve(&by);
      const std::string reason = shutdown ? "shutdown requested by " + by : "stopped";
      connector_.closePeers("FFN rank " + std::to_string(config_.rank) + " " + reason);
      finish(State::kStopped, reason);
      return;
    } catch (const CommError& e) {
      if (stop_.load()) {
        connector_.closePeers("FFN rank " + std::to_string(config_.rank) + " stopped");
        finish(State::kStopped, "stopped");
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        lastError_ = e.what();
        ++peerLosses_;
        state_ = State::kRendezvous;
      }
      // The block cannot step without every peer: release the others (they reconnect)
      // and gather the block again, however long that takes. With expert parallelism the
      // FFN group cannot either: close it, so every group peer fails its step now, too.
      const bool fromGroup = dynamic_cast<const comm::EpGroupError*>(&e) != nullptr;
      const std::string why = "FFN rank " + std::to_string(config_.rank) +
                              (fromGroup ? " lost its expert-parallel group (" : " lost a peer of its block (") + e.what() + ")";
      if (ep_) {
        if (ep_->device()) ep_->device()->abort();  // device waits on the group end now
        ep_->mesh().close(why);
      }
      connector_.closePeers(why + "; reconnect to rejoin");
      engine_->stats().setFfnLoop(FfnLoopState::Idle);
      for (;;) {
        try {
          rendezvous(0);
          setState(State::kServing);
          break;
        } catch (const CommError& again) {
          if (stop_.load()) {
            finish(State::kStopped, "stopped");
            return;
          }
          {
            std::lock_guard<std::mutex> lock(mu_);
            lastError_ = again.what();
          }
          // E.g. a group peer refused this rank (another model): release the block and try again.
          if (ep_) ep_->mesh().close(again.what());
          connector_.closePeers(std::string("FFN rank ") + std::to_string(config_.rank) + ": " + again.what() +
                                "; reconnect to rejoin");
          for (int i = 0; i < 10 && !stop_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
    } catch (const std::exception& e) {
      // The FFN computation itself failed: this rank cannot serve; say why and stop.
      std::string reason = std::string("FFN rank ") + std::to_string(config_.rank) + " failed: " + e.what();
      connector_.closePeers(reason);
      finish(State::kFailed, reason);
      return;
    }
  }
}

bool AfdFfnServer::serve(std::string* by) {
  EngineStats& stats = engine_->stats();
  // Expert parallelism: a group peer's step start also wakes this rank (it calls its block in).
  comm::FfnRendezvous::StepWake wake;
  if (ep_) {
    wake.fds = ep_->mesh().pollFds();
    wake.onWake = [this](size_t i, std::string* who) { return ep_->mesh().absorbWake(i, who); };
  }
  for (;;) {
    stats.setFfnLoop(FfnLoopState::WaitingControl);
    if (!connector_.recvStep(&payload_, &stop_, by, ep_ ? &wake : nullptr)) return !by->empty();
    const auto t0 = Clock::now();
    sampled_ = payload_.step % kWireSampleSteps == 0;
    // Kernel choices for the block's whole step (its stages are bit-equal to one stage).
    engine_->backend().setStepRows(stageRows(0) + stageRows(1));
    stepStages_ = payload_.numStages;
    if (ep_) {
      // Every FFN rank runs as many stages as the group's largest step (stage by stage),
      // with sections as large as the group's largest stage.
      const int64_t rows[2] = {stageRows(0), stageRows(1)};
      stepStages_ = ep_->mesh().beginStep(payload_.numStages, by, rows, &epCap_);
      if (stepStages_ == 0) return true;  // a group peer shut down
      ep_->stats().groupSteps.fetch_add(1, std::memory_order_relaxed);
      if (epDevice()) beginDeviceExchangeStep();
    }
    if (!runGraphStep()) {
      noteEagerStep();
      for (int layer = 0; layer < static_cast<int>(config_.model.numLayers); ++layer) {
        if (faultLayerDelayUs_ > 0) {
          stats.setFfnLoop(FfnLoopState::Receiving, layer, 0);
          std::this_thread::sleep_for(std::chrono::microseconds(faultLayerDelayUs_));
        }
        for (int stage = 0; stage < stepStages_; ++stage) runLayerStage(layer, stage);
      }
    }
    if (epDevice()) {
      // The group's device waits end on their own deadline; a group peer whose link closed ends them now.
      ep_->device()->finishStep(comm::Deadline::afterMs(config_.stepDeadlineMs), &stop_, [this] { return ep_->mesh().closedPeer(); });
    }
    data().synchronize({});
    if (epDevice() && sampled_) ep_->refreshDeviceStats();
    const uint64_t us = usSince(t0);
    stats.stepsServed += 1;
    stats.steps += 1;
    stats.lastStepUs = us;
    stats.totalStepUs += us;
  }
}

void AfdFfnServer::runLayerStage(int layer, int stage) {
  EngineStats& stats = engine_->stats();
  const int peers = payload_.numPeers;
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  const bool withLogits = config_.model.gateOnAttention && config_.model.moeLayers[layer];
  const uint32_t L = static_cast<uint32_t>(layer), S = static_cast<uint32_t>(stage);
  if (stage >= payload_.numStages) {
    // A stage only other blocks of the FFN group have: join its exchange with no rows.
    stats.setFfnLoop(FfnLoopState::Computing, layer, stage);
    if (!config_.model.moeLayers[layer]) return;
    if (epDevice()) {
      Tensor none, out;
      ep_->moeLayerDevice(layer, stage, none, nullptr, out);
    } else {
      runExpertParallel(layer, stage, 0, nullptr, nullptr, nullptr);
    }
    return;
  }
  stats.setFfnLoop(FfnLoopState::Receiving, layer, stage);
  rowOffset_[0] = 0;
  for (int p = 0; p < peers; ++p) rowOffset_[p + 1] = rowOffset_[p] + payload_.wireRows(p, stage);
  const int64_t rows = rowOffset_[peers];
  // hidden, logits: [rows, H], [rows, E] concatenated in peer order; out: [rows, H].
  if (devicePlane_) {
    runLayerStageDevice(layer, stage, rows, withLogits);
    return;
  }
  const size_t rowBytes = static_cast<size_t>(H) * actBytes();
  if (hidden_.size() < rows * rowBytes) hidden_.resize(rows * rowBytes * 2);
  if (withLogits && static_cast<int64_t>(logits_.size()) < rows * E) logits_.resize(rows * E * 2);
  LayerStageCounters& c = stats.at(layer, stage);
  uint64_t received = 0;
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    connector_.recv(p, hidden_.data() + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kHidden, L, S, payload_.step}, {});
    received += n * rowBytes;
    if (withLogits) {
      connector_.recv(p, logits_.data() + rowOffset_[p] * E, n * E * 4,
                      {TransferKind::kRouterLogits, L, S, payload_.step}, {});
      received += n * E * 4;
    }
  }
  c.bytesAtoF += received;
  if (sampled_) c.wireTimeUsAtoF = connector_.lastWireTimeUs(0, false);
  // out_[stage] was last sent one layer ago; those sends have completed (the peers
  // answered since), so synchronize() returns at once and the buffer is free.
  connector_.synchronize({});
  std::vector<uint8_t>& out = out_[stage];
  if (out.size() < rows * rowBytes) out.resize(rows * rowBytes * 2);
  stats.setFfnLoop(FfnLoopState::Computing, layer, stage);
  if (ep_ && config_.model.moeLayers[layer]) {
    runExpertParallel(layer, stage, rows, hidden_.data(), withLogits ? logits_.data() : nullptr, out.data());
  } else {
    engine_->ffnForward(layer, hidden_.data(), rows, withLogits ? logits_.data() : nullptr, out.data());
  }
  stats.setFfnLoop(FfnLoopState::Sending, layer, stage);
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    connector_.send(p, out.data() + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kFfnOutput, L, S, payload_.step}, {});
  }
  c.bytesFtoA += static_cast<uint64_t>(rows) * rowBytes;
  if (sampled_) {
    connector_.synchronize({});
    c.wireTimeUsFtoA = connector_.lastWireTimeUs(0, true);
  }
}

}  // namespace afd

namespace afd {

void AfdFfnServer::runLayerStageDevice(int layer, int stage, int64_t rows, bool withLogits) {
  EngineStats& stats = engine_->stats();
  Backend& be = engine_->backend();
  const int peers = payload_.numPeers;
  const int64_t H = config_.model.hiddenSize, E = config_.model.numExperts;
  const uint32_t L = static_cast<uint32_t>(layer), S = static_cast<uint32_t>(stage);
  const size_t rowBytes = static_cast<size_t>(H) * actBytes();
  const DType act = engine_->activationDtype();
  hiddenDev_.growTo(&be, rows * rowBytes);
  if (withLogits) logitsDev_.growTo(&be, rows * E * 4);
  outDev_[stage].growTo(&be, rows * rowBytes);
  if (rows > warmRows_) warmRows_ = rows;
  char* hidden = static_cast<char*>(hiddenDev_.data());
  char* logits = static_cast<char*>(logitsDev_.data());
  char* out = static_cast<char*>(outDev_[stage].data());
  comm::DataPlane& d = *devicePlane_;
  // Everything below is stream-ordered on the engine's stream: receives, FFN, sends.
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    d.recv(p, hidden + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kHidden, L, S, payload_.step}, {});
    if (withLogits) d.recv(p, logits + rowOffset_[p] * E * 4, n * E * 4, {TransferKind::kRouterLogits, L, S, payload_.step}, {});
  }
  countStageBytes(layer, stage, rows, withLogits);
  stats.setFfnLoop(FfnLoopState::Computing, layer, stage);
  if (epDevice() && config_.model.moeLayers[layer]) {
    Tensor in = hiddenDev_.view(act, {rows, H}), o = outDev_[stage].view(act, {rows, H});
    Tensor lg = withLogits ? logitsDev_.view(DType::F32, {rows, E}) : Tensor{};
    ep_->moeLayerDevice(layer, stage, in, withLogits ? &lg : nullptr, o);
  } else if (ep_ && config_.model.moeLayers[layer]) {
    // Expert parallelism over the host mesh on a device wire: the group exchange is host-staged.
    hidden_.resize(rows * rowBytes);
    out_[stage].resize(rows * rowBytes);
    be.copyToHost(hidden_.data(), hidden, rows * rowBytes);
    if (withLogits) {
      logits_.resize(static_cast<size_t>(rows * E));
      be.copyToHost(logits_.data(), logits, rows * E * 4);
    }
    runExpertParallel(layer, stage, rows, hidden_.data(), withLogits ? logits_.data() : nullptr, out_[stage].data());
    be.copyToDevice(out, out_[stage].data(), rows * rowBytes);
  } else {
    std::lock_guard<std::mutex> lock(engine_->mutex());
    Tensor in = hiddenDev_.view(act, {rows, H}), o = outDev_[stage].view(act, {rows, H});
    Tensor lg = withLogits ? logitsDev_.view(DType::F32, {rows, E}) : Tensor{};
    engine_->ffnModel()->forward(layer, in, withLogits ? &lg : nullptr, o);
  }
  stats.setFfnLoop(FfnLoopState::Sending, layer, stage);
  for (int p = 0; p < peers; ++p) {
    const size_t n = static_cast<size_t>(rowOffset_[p + 1] - rowOffset_[p]);
    d.send(p, out + rowOffset_[p] * rowBytes, n * rowBytes, {TransferKind::kFfnOutput, L, S, payload_.step}, {});
  }
}

}  // namespace afd
