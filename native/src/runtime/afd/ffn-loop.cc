#include "runtime/afd/ffn-loop.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "ep/options.h"
#include "runtime/afd/device-plane.h"

namespace afd {

using comm::CommError;
using comm::CommErrorKind;

namespace {

std::shared_ptr<Engine> requireFfnEngine(std::shared_ptr<Engine> engine) {
  AFD_CHECK(engine && engine->ffnModel() != nullptr && engine->info().role == "ffn",
            "an FFN server needs an engine loaded with role ffn (this one is "
                << (engine ? engine->info().role : std::string("missing")) << ")");
  return engine;
}

}  // namespace

const char* FfnLoop::stateName(State s) {
  switch (s) {
    case State::kCreated: return "created";
    case State::kRendezvous: return "rendezvous";
    case State::kServing: return "serving";
    case State::kStopped: return "stopped";
    case State::kFailed: return "failed";
  }
  return "unknown";
}

FfnLoop::FfnLoop(std::shared_ptr<Engine> engine, const AfdConnectorOptions& options)
    : engine_(requireFfnEngine(std::move(engine))),
      config_(makeConnectorConfig(options, engine_->config(), engine_->computeGateOnAttention(), engine_->activationDtype())) {
  Backend& backend = engine_->backend();
  block_ = std::make_unique<FfnBlock>(config_, options.connector, options.maxStepTokens, backend);
  requireConnectorBackend(options.connector, backend, "FFN");
  if (expertParallelOn(options, config_)) {
    const int64_t blockRows = config_.topology.maxBlockSize();
    const int64_t maxRows = static_cast<int64_t>(std::max(options.maxStepTokens, 1 << 16)) * blockRows;
    group_ = std::make_unique<EpFfnGroup>(*engine_->ffnModel(), engine_->mutex(), epMeshConfig(config_, options, engine_->config()),
                                          maxRows);
    const EpTransport transport = epTransportOf(options, config_);
    AFD_CHECK(!movesDeviceMemory(transport) || !backend.sharesHostMemory(),
              "epTransport " << nameOf(transport) << " moves device memory between the FFN ranks: load the FFN engine with --backend cuda "
                             "(it runs on " << backend.name() << "), or use epTransport tcp");
    // A stage brings at most maxStepTokens rows from each attention rank of the largest block.
    const int64_t capMax = static_cast<int64_t>(std::max(options.maxStepTokens, 1)) * blockRows;
    expert_ = std::make_unique<FfnExpertStage>(*group_, *engine_, config_, transport, capMax, block_->deviceWire(), &stop_);
    block_->attachGroup(group_.get());
  }
  stepper_ = std::make_unique<FfnStepper>(*engine_, config_, *block_, expert_.get(), options.ffnGraphs, options.faultLayerDelayUs,
                                          &stop_);
}

FfnLoop::~FfnLoop() { stop(); }

void FfnLoop::start() {
  std::lock_guard<std::mutex> lock(mu_);
  AFD_CHECK(state_ == State::kCreated, "FfnServer.start(): the server was already started");
  state_ = State::kRendezvous;
  thread_ = std::thread([this] { loop(); });
}

void FfnLoop::waitReady() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return ready_; });
  if (!readyError_.empty()) throw Error(readyError_);
}

std::string FfnLoop::waitExit() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return exited_ || state_ == State::kCreated; });
  return exitReason_;
}

void FfnLoop::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  block_->closeListener();
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

FfnLoop::Snapshot FfnLoop::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot s;
  s.state = state_;
  s.peersJoined = block_->peersJoined();
  s.blockSize = block_->blockSize();
  s.firstAttentionRank = block_->firstAttentionRank();
  s.listenAddress = block_->listenAddress();
  s.lastError = lastError_;
  s.peerLosses = peerLosses_;
  s.exitReason = exitReason_;
  return s;
}

void FfnLoop::loop() {
  FfnPhase phase = FfnPhase::Gathering;
  while (phase != FfnPhase::Ended) {
    const FfnEvent event = runPhase(phase);
    const FfnTransition t = nextTransition(phase, event, config_.rank);
    apply(t);
    phase = t.next;
  }
}

FfnEvent FfnLoop::runPhase(FfnPhase phase) {
  FfnEvent event;
  try {
    if (phase == FfnPhase::Serving) {
      std::string by;
      const bool shutdown = serve(&by);
      event.kind = shutdown ? FfnEvent::Kind::ShutdownRequested : FfnEvent::Kind::Stopped;
      event.detail = by;
    } else {
      gather(phase == FfnPhase::Gathering ? -1 : 0);
      event.kind = FfnEvent::Kind::Joined;
    }
  } catch (const CommError& e) {
    event.kind = FfnEvent::Kind::LinkLost;
    event.detail = e.what();
    event.fromGroup = dynamic_cast<const comm::EpGroupError*>(&e) != nullptr;
    event.stopKind = e.kind() == CommErrorKind::kStopped;
    event.stopRequested = stop_.load();
  } catch (const std::exception& e) {
    event.kind = FfnEvent::Kind::Failed;
    event.detail = e.what();
  }
  return event;
}

void FfnLoop::gather(int timeoutMs) {
  stepper_->dropGraphs();  // they point at the previous plane and exchange
  block_->gather(&stop_, timeoutMs, [this] {
    if (expert_) expert_->bootstrap();
  });
  stepper_->onGathered();
}

bool FfnLoop::serve(std::string* by) {
  for (;;) {
    engine_->stats().setFfnLoop(FfnLoopState::WaitingControl);
    if (!block_->recvStep(&payload_, &stop_, by)) return !by->empty();
    if (!stepper_->run(payload_, by)) return true;  // a group peer shut down
  }
}

void FfnLoop::apply(const FfnTransition& t) {
  if (t.next == FfnPhase::Ended) {
    if (!t.peerMessage.empty()) block_->release(t.peerMessage);
    finish(t);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!t.lastError.empty()) lastError_ = t.lastError;
    if (t.countLoss) ++peerLosses_;
    if (t.markReady) ready_ = true;
    state_ = t.state;
    cv_.notify_all();
  }
  if (group_ && !t.groupMessage.empty()) {
    if (t.abortExchange && group_->device()) group_->device()->abort();  // device waits on the group end now
    group_->mesh().close(t.groupMessage);
  }
  if (!t.peerMessage.empty()) block_->release(t.peerMessage);
  if (t.next != FfnPhase::Serving) engine_->stats().setFfnLoop(FfnLoopState::Idle);
  for (int i = 0; t.pauseBeforeRetry && i < 10 && !stop_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

void FfnLoop::finish(const FfnTransition& t) {
  engine_->stats().setFfnLoop(FfnLoopState::Idle);
  block_->closeListener();
  if (group_) {
    if (t.groupShutdown) {
      group_->mesh().notifyShutdown(t.groupMessage);
    } else {
      group_->mesh().close(t.groupMessage);
    }
    group_->mesh().closeListener();
  }
  std::lock_guard<std::mutex> lock(mu_);
  state_ = t.state;
  exitReason_ = t.exitReason;
  if (!t.lastError.empty()) lastError_ = t.lastError;
  if (!ready_) {
    ready_ = true;
    readyError_ = t.exitReason;
  }
  exited_ = true;
  cv_.notify_all();
}

}  // namespace afd
