// An attention-role engine joined to its FFN rank: the TCP connector, the remote FFN
// executor attached to the engine, and a watcher thread that (a) answers the FFN rank's
// step calls while this rank is idle, so every peer of the block steps in lockstep
// without the scheduler's help, and (b) notices a lost FFN rank while idle and
// reconnects when it comes back. Steps fail fast with the loss reason meanwhile.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/rendezvous.h"
#include "runtime/afd/connector-options.h"
#include "runtime/afd/remote-ffn-executor.h"
#include "runtime/engine/engine.h"

namespace afd {

class AfdAttentionLink {
 public:
  enum class State { kConnecting, kConnected, kLost, kClosed };
  struct Snapshot {
    State state = State::kConnecting;
    std::string peer;       // "FFN rank 1 at 10.0.0.2:29501"
    std::string lastError;  // why the link is (or was last) down; empty when never lost
    uint64_t reconnects = 0;
    uint64_t emptySteps = 0;  // steps joined while idle (placeholder rows only)
  };

  AfdAttentionLink(std::shared_ptr<Engine> engine, const AfdConnectorOptions& options);
  ~AfdAttentionLink();

  // Rendezvous with the FFN rank (blocks up to the rendezvous timeout; run it on a
  // worker thread), then attaches the executor to the engine and starts the watcher.
  void connect();
  // Stops the watcher, detaches the executor and closes the connection; with
  // sendShutdown the FFN rank is told to stop its loop. Idempotent.
  void close(bool sendShutdown, const std::string& reason);
  Snapshot snapshot() const;
  static const char* stateName(State s);

 private:
  void watchLoop();
  void noteLost(const std::string& reason);
  // Device connectors: reads the bootstrap blob on a fresh link and builds the plane
  // (blocks until the FFN rank joins the NCCL communicator). Null for tcp.
  std::unique_ptr<comm::DataPlane> bootstrapDevicePlane(comm::TcpLink& link);
  // Makes `link` (and `plane`, when a device connector is used) current. Locks held by the caller.
  void adoptLocked(std::unique_ptr<comm::TcpLink> link, std::unique_ptr<comm::DataPlane> plane);

  std::shared_ptr<Engine> engine_;
  ConnectorKind connectorKind_ = ConnectorKind::Tcp;
  int maxStepTokens_ = 2048;   // sizes the peer-memory inboxes (AfdConnectorOptions)
  bool deviceWire_ = false;
  comm::RendezvousConfig config_;
  comm::AttentionRendezvous connector_;
  std::unique_ptr<comm::DataPlane> devicePlane_;  // nccl: hidden states / FFN outputs (TCP keeps control)
  std::unique_ptr<RemoteFfnExecutor> executor_;
  std::atomic<bool> stop_{false};
  // Raised by the watcher when the FFN rank's connection closes during a step; the device
  // plane's wait polls it (DataPlane::setPeerLostFlag).
  std::atomic<bool> peerLost_{false};
  std::thread watcher_;
  mutable std::mutex stateMu_;  // guards the fields below and the connector's link swap
  State state_ = State::kConnecting;
  std::string lastError_;
  uint64_t reconnects_ = 0;
  uint64_t emptySteps_ = 0;
};

}  // namespace afd
