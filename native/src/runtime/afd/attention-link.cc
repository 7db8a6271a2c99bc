#include "runtime/afd/attention-link.h"

#include <chrono>

#include "runtime/afd/device-plane.h"

namespace afd {

namespace {
// Pause before dialing again after the FFN rank refused this rank.
constexpr int kReconnectAttemptMs = 1000;
// Poll interval of the idle watcher.
constexpr int kIdlePollMs = 50;
// Poll interval for the FFN rank's EOF while a step holds the engine.
constexpr int kBusyPollMs = 2;
}  // namespace

const char* AfdAttentionLink::stateName(State s) {
  switch (s) {
    case State::kConnecting: return "connecting";
    case State::kConnected: return "connected";
    case State::kLost: return "lost";
    case State::kClosed: return "closed";
  }
  return "unknown";
}

AfdAttentionLink::AfdAttentionLink(std::shared_ptr<Engine> engine, const AfdConnectorOptions& options)
    : engine_(std::move(engine)),
      connectorKind_(options.connector),
      maxStepTokens_(options.maxStepTokens),
      deviceWire_(movesDeviceMemory(options.connector)),
      config_(makeConnectorConfig(options, engine_->config(), engine_->computeGateOnAttention(), engine_->activationDtype())),
      connector_(config_) {
  AFD_CHECK(engine_->info().role == "attention",
            "an AFD attention link needs an engine loaded with role attention (this one is " << engine_->info().role
                                                                                            << ")");
  requireConnectorBackend(options.connector, engine_->backend(), "attention");
  executor_ = std::make_unique<RemoteFfnExecutor>(connector_, connector_, config_.model, engine_->backend(),
                                                  engine_->stats());
}

std::unique_ptr<comm::DataPlane> AfdAttentionLink::bootstrapDevicePlane(comm::TcpLink& link) {
  if (!deviceWire_) return nullptr;
  DevicePlaneExchange exchange;
  exchange.recv = [&](int) { return comm::AttentionRendezvous::recvBootstrap(link, config_.stepDeadlineMs); };
  exchange.send = [&](int, const std::vector<uint8_t>& blob) {
    comm::AttentionRendezvous::sendBootstrapReply(link, blob, config_.stepDeadlineMs);
  };
  return buildDevicePlane(connectorKind_, engine_->backend(), false, 1, devicePlaneOptions(config_, maxStepTokens_),
                          exchange, link.peer());
}

void AfdAttentionLink::adoptLocked(std::unique_ptr<comm::TcpLink> link, std::unique_ptr<comm::DataPlane> plane) {
  connector_.adopt(std::move(link));
  peerLost_.store(false);
  if (deviceWire_) {
    devicePlane_ = std::move(plane);  // the old plane (if any) is aborted and freed here
    devicePlane_->setPeerLostFlag(&peerLost_);
    executor_->setDataPlane(*devicePlane_);
  }
}

AfdAttentionLink::~AfdAttentionLink() { close(false, "attention rank closed"); }

void AfdAttentionLink::connect() {
  {
    std::lock_guard<std::mutex> lock(stateMu_);
    AFD_CHECK(state_ == State::kConnecting && !watcher_.joinable(), "AttentionLink.connect(): already connected");
  }
  try {
    auto link = connector_.dial(&stop_, config_.rendezvousTimeoutMs);
    auto plane = bootstrapDevicePlane(*link);
    std::lock_guard<std::mutex> lock(stateMu_);
    adoptLocked(std::move(link), std::move(plane));
  } catch (const comm::CommError& e) {
    std::lock_guard<std::mutex> lock(stateMu_);
    lastError_ = e.what();
    throw;
  }
  engine_->setFfnExecutor(executor_.get());
  {
    std::lock_guard<std::mutex> lock(stateMu_);
    state_ = State::kConnected;
  }
  watcher_ = std::thread([this] { watchLoop(); });
}

void AfdAttentionLink::noteLost(const std::string& reason) {
  std::lock_guard<std::mutex> lock(stateMu_);
  if (state_ == State::kConnected) {
    state_ = State::kLost;
    lastError_ = reason;
  }
}

void AfdAttentionLink::watchLoop() {
  while (!stop_.load()) {
    bool up;
    {
      std::lock_guard<std::mutex> lock(stateMu_);
      up = connector_.connected();
    }
    if (!up) {
      noteLost(connector_.lostReason());
      {
        // An FFN rank that was stopped (not dead) finishes the step it had and then waits
        // on this link for the next one, never reading this rank's new handshake: tell it.
        std::lock_guard<std::mutex> lock(stateMu_);
        connector_.hangUpBroken();
      }
      try {
        // Waits (until close) for the FFN rank to listen again and for its whole block to
        // rejoin; steps fail fast on the old link meanwhile.
        auto link = connector_.dial(&stop_, 0);
        auto plane = bootstrapDevicePlane(*link);
        std::lock_guard<std::mutex> engineLock(engine_->mutex());
        std::lock_guard<std::mutex> lock(stateMu_);
        adoptLocked(std::move(link), std::move(plane));
        state_ = State::kConnected;
        ++reconnects_;
      } catch (const comm::CommError& e) {
        if (e.kind() == comm::CommErrorKind::kConfig) {
          std::lock_guard<std::mutex> lock(stateMu_);
          lastError_ = e.what();  // refused (e.g. the FFN rank restarted with another model)
        }
        if (e.kind() != comm::CommErrorKind::kStopped) {
          std::this_thread::sleep_for(std::chrono::milliseconds(kReconnectAttemptMs));
        }
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(stateMu_);
          lastError_ = e.what();  // e.g. the device plane could not be built
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(kReconnectAttemptMs));
      }
      continue;
    }
    if (!connector_.hasIncoming(kIdlePollMs)) continue;
    // A step call, a goodbye or EOF. Steps of the engine hold the same mutex, so the
    // frames of a running step are never read here. Over TCP a step's own frames keep the
    // socket readable, so wait for the step; with a device plane, a running step may be
    // waiting on the device for an FFN rank that died: only look for its EOF, so that wait
    // fails now instead of at the step deadline.
    std::unique_lock<std::mutex> engineLock(engine_->mutex(), std::defer_lock);
    if (!deviceWire_) {
      engineLock.lock();
    } else if (!engineLock.try_lock()) {
      if (connector_.peerClosed()) peerLost_.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(kBusyPollMs));
      continue;
    }
    try {
      if (connector_.pollStepCall(0)) {
        executor_->runEmptyStep();
        std::lock_guard<std::mutex> lock(stateMu_);
        ++emptySteps_;
      }
    } catch (const std::exception& e) {
      noteLost(e.what());
    }
  }
}

void AfdAttentionLink::close(bool sendShutdown, const std::string& reason) {
  stop_.store(true);
  if (watcher_.joinable()) watcher_.join();
  {
    std::lock_guard<std::mutex> lock(stateMu_);
    if (state_ == State::kClosed) return;
  }
  // Waits for a running step; later steps fail with "no FFN executor".
  engine_->setFfnExecutor(nullptr);
  std::lock_guard<std::mutex> lock(stateMu_);
  if (sendShutdown) {
    connector_.shutdown(reason);
  } else {
    connector_.close();
  }
  state_ = State::kClosed;
}

AfdAttentionLink::Snapshot AfdAttentionLink::snapshot() const {
  std::lock_guard<std::mutex> lock(stateMu_);
  Snapshot s;
  s.state = state_;
  if (s.state == State::kConnected && !connector_.connected()) {
    s.state = State::kLost;  // a step found it before the watcher did
    s.lastError = connector_.lostReason();
  } else {
    s.lastError = lastError_;
  }
  s.peer = connector_.peerName();
  s.reconnects = reconnects_;
  s.emptySteps = emptySteps_;
  return s;
}

}  // namespace afd
