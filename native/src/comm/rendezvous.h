// The TCP side of every connector, one framed connection per attention <-> FFN pair:
// rendezvous from host + base port + topology (FFN rank f listens on
// ffnHosts[f]:basePort+f; the attention ranks of its block connect, retrying until the
// rendezvous timeout) and handshake, then the control plane of every step and the device
// planes' bootstrap exchange (nccl, peer). For connector tcp (CPU and development) the
// same link is the data plane too. Works across hosts. The attention side is in
// rendezvous-attention.cc, the FFN side in rendezvous-ffn.cc.
#pragma once
#include <poll.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/control-plane.h"
#include "comm/data-plane.h"
#include "comm/tcp-handshake.h"
#include "comm/tcp-link.h"
#include "comm/topology.h"

namespace afd::comm {

// The frame kind that carries a transfer kind.
FrameKind transferFrameKind(TransferKind kind);
// The header of a data frame carrying `bytes` of the transfer `tag`.
FrameHeader transferHeader(const TransferTag& tag, size_t bytes);
// A deadline timeoutMs from now; never when timeoutMs is 0.
Deadline rendezvousDeadline(int timeoutMs);

struct RendezvousConfig {
  AfdTopology topology;
  /** Rank within its role. */
  int rank = 0;
  /** Host of each FFN rank, indexed by FFN rank (size = numFfn). */
  std::vector<std::string> ffnHosts;
  /** FFN rank f listens on basePort + f (0 on a 1-FFN topology = ephemeral, for tests). */
  int basePort = 29500;
  /** FFN only: address to bind; empty = ffnHosts[rank], or every interface when that is not a local address. */
  std::string listenHost;
  /** A peer silent this long inside a step fails the step, naming the peer. */
  int stepDeadlineMs = 5000;
  /** How long rendezvous waits for the other side; 0 = forever. */
  int rendezvousTimeoutMs = 300000;
  /** What both sides must agree on. */
  ModelShape model;
  /** Identity of this start of the topology; peers must carry the same (see HelloPayload). */
  std::string rendezvousId;

  // Checks ranks, hosts and ports; throws CommError(kConfig).
  void validate(bool ffnRole) const;
};

// Attention side: one link to the FFN rank that owns this rank's block.
class AttentionRendezvous : public AttentionControlPlane, public DataPlane {
 public:
  explicit AttentionRendezvous(RendezvousConfig config);
  ~AttentionRendezvous() override;
  // Connects and handshakes; retries until the rendezvous timeout. Throws CommError.
  void connect(StopFlag stop) { adopt(dial(stop, config_.rendezvousTimeoutMs)); }
  // Connects and handshakes a new link without touching the current one (so a
  // reconnect can run while steps fail fast on the old link). timeoutMs 0 = forever.
  std::unique_ptr<TcpLink> dial(StopFlag stop, int timeoutMs) const;
  // Device data planes: the bootstrap blob (NCCL unique id) the FFN rank sends on a
  // freshly handshaken link, before the first step. Throws CommError.
  static std::vector<uint8_t> recvBootstrap(TcpLink& link, int timeoutMs);
  // Two-way bootstraps (connector peer): this rank's answer to the FFN rank's blob, on
  // the same link, before the first step. Throws CommError.
  static void sendBootstrapReply(TcpLink& link, const std::vector<uint8_t>& blob, int timeoutMs);
  // Makes `link` the current connection (the block restarts at step 0).
  void adopt(std::unique_ptr<TcpLink> link);
  bool connected() const { return link_ != nullptr && !link_->broken(); }
  // Why the link is down ("" while connected, "not connected" before the first connect).
  std::string lostReason() const;
  // "FFN rank 1 at 10.0.0.2:29501".
  const std::string& peerName() const { return peerName_; }

  // AttentionControlPlane
  void beginStep(const uint32_t* stageTokens, int numStages, uint32_t flags, ControlPayload* merged) override;
  bool pollStepCall(int timeoutMs) override;
  void shutdown(const std::string& reason) override;
  int peerIndex() const override { return peerIndex_; }

  // DataPlane (peer 0 = the FFN rank)
  int numPeers() const override { return 1; }
  void send(int peer, const void* src, size_t bytes, const TransferTag& tag, CommStream stream) override;
  void recv(int peer, void* dst, size_t bytes, const TransferTag& tag, CommStream stream) override;
  void synchronize(CommStream stream) override;
  WireTime wireTime(int, bool send) const override {
    return !link_ ? WireTime{} : send ? link_->sendWire() : link_->recvWire();
  }
  // True when something (a step call, a goodbye, EOF) waits to be read, within timeoutMs.
  bool hasIncoming(int timeoutMs) const { return link_ && link_->readable(timeoutMs); }
  // The FFN rank's end of the link closed (its process is gone); safe during a step.
  bool peerClosed() const { return link_ && link_->peerClosed(); }
  std::string pendingGoodbye() override;

  // Closes the connection without the shutdown flag (the FFN rank sees the peer lost).
  void close();
  // A broken link is given up: its socket is shut down so that the FFN rank, which may be
  // waiting on it for the next step, reads EOF and gathers its block again (where this
  // rank's reconnection waits). The link's error stays as lostReason. Safe during a step.
  void hangUpBroken() {
    if (link_ && link_->broken()) link_->hangUp();
  }

 private:
  RendezvousConfig config_;
  int ffnRank_ = 0;
  int peerIndex_ = 0;
  std::string host_;
  int port_ = 0;
  std::string peerName_;
  std::unique_ptr<TcpLink> link_;
  uint64_t nextStep_ = 0;
  std::vector<uint8_t> scratch_;  // encoded control payloads (reused)
  ControlPayload request_;
};

// FFN side: a listener and one link per attention peer of the block.
class FfnRendezvous : public FfnControlPlane, public DataPlane {
 public:
  // Binds the listening socket immediately (so a busy port fails at once).
  explicit FfnRendezvous(RendezvousConfig config);
  ~FfnRendezvous() override;
  // Accepts and handshakes every peer of the block (rejecting strangers with a reason),
  // until the rendezvous timeout. Throws CommError; kStopped when *stop is set.
  // The handshake is acknowledged to every peer once the whole block has joined, so an
  // attention rank's connect() returns only when its FFN rank can serve.
  // timeoutMs: rendezvous timeout (0 = forever; -1 = the configured one).
  // beforeAck (may be empty) runs once the whole block has joined, before it is
  // acknowledged: expert parallelism forms the FFN group there, so attention ranks start
  // stepping only when every FFN rank of the group can serve.
  void acceptPeers(StopFlag stop, int timeoutMs = -1, const std::function<void()>& beforeAck = {});
  // Peers connected so far (for rendezvous progress).
  int peersJoined() const { return joined_.load(); }
  int blockSize() const { return block_.size; }
  const AttentionBlock& block() const { return block_; }
  // The port actually bound (resolves port 0).
  int listenPort() const { return listener_.port(); }
  const std::string& listenAddress() const { return listener_.address(); }
  const std::string& peerName(int peer) const { return links_[peer]->peer(); }

  // FfnControlPlane
  bool recvStep(ControlPayload* merged, StopFlag stop, std::string* shutdownBy) override {
    return recvStep(merged, stop, shutdownBy, nullptr);
  }
  // Expert parallelism: an idle FFN rank also wakes when a peer of its FFN group starts a
  // step (one of `fds` is readable before any block peer asks); onWake(i) reads that
  // start and returns false to stop (a shutdown notice: it sets *shutdownBy). The whole
  // block is then called into the step, so every FFN rank joins every group step.
  struct StepWake {
    std::vector<int> fds;
    std::function<bool(size_t index, std::string* shutdownBy)> onWake;
  };
  bool recvStep(ControlPayload* merged, StopFlag stop, std::string* shutdownBy, const StepWake* wake);

  // DataPlane (peer p = attention rank block.start + p)
  int numPeers() const override { return block_.size; }
  void send(int peer, const void* src, size_t bytes, const TransferTag& tag, CommStream stream) override;
  void recv(int peer, void* dst, size_t bytes, const TransferTag& tag, CommStream stream) override;
  void synchronize(CommStream stream) override;
  WireTime wireTime(int peer, bool send) const override {
    return send ? links_[peer]->sendWire() : links_[peer]->recvWire();
  }

  // Device data planes: sends peer p its bootstrap blob (after acceptPeers). Throws CommError.
  void sendBootstrap(int peer, const std::vector<uint8_t>& blob);
  // Two-way bootstraps (connector peer): peer p's reply to its blob, within timeoutMs.
  // Throws CommError (kProtocol for another frame or a reply over 64 KiB).
  std::vector<uint8_t> recvBootstrapReply(int peer, int timeoutMs);
  // Says goodbye to every peer (reason) and closes the links; the listener stays open.
  void closePeers(const std::string& reason);
  // Stops listening (the port is free again once this returns).
  void closeListener() { listener_.close(); }

 private:
  // Reads one StepRequest from peer p into request_ (checks its step number).
  void readRequest(int peer, Deadline deadline, StopFlag stop);
  // Rendezvous: frees the slots of joined peers whose connection has closed.
  void dropDeadPeers();

  RendezvousConfig config_;
  AttentionBlock block_;
  Listener listener_;
  std::vector<std::unique_ptr<TcpLink>> links_;  // [block size]
  std::atomic<int> joined_{0};
  uint64_t step_ = 0;
  std::vector<uint8_t> scratch_;
  ControlPayload request_;
  std::vector<bool> published_;
  std::vector<struct pollfd> pollFds_;
};

}  // namespace afd::comm
