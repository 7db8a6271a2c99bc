// The FFN group's mesh for expert parallelism (EP): one framed TCP link between every
// pair of FFN ranks. FFN rank f listens on hosts[f]:basePort + f, dials every lower rank
// and accepts every higher one, so the ranks may start in any order. On the mesh:
//  - a step barrier once per step (beginStep): every rank sends its EpStepStart and reads
//    every peer's, so the group agrees on the stage count and steps in lockstep; an idle
//    rank is woken by the first start that reaches it (absorbWake, polled beside its
//    block's links by FfnRendezvous::recvStep);
//  - per (MoE layer, stage) two all-to-alls (exchange): dispatch (token-expert pairs to
//    the rank that owns the expert) and combine (the owner's outputs back to the source);
//  - a shutdown notice (an EpStepStart with the shutdown flag and the reason).
// A peer silent for deadlineMs inside a step fails it, a closed one at once; errors are
// EpGroupError naming the peer. A call that fails closes the mesh before it throws (so
// every peer fails too, at once, and no posted send still reads the caller's buffers);
// the group then forms again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm-error.h"
#include "comm/tcp-link.h"
#include "comm/tcp-socket.h"

namespace afd::comm {

// An error of the FFN group (a group peer died, hung, refused or shut down); kind() as
// for the connector.
class EpGroupError : public CommError {
 public:
  EpGroupError(CommErrorKind kind, const std::string& message) : CommError(kind, message) {}
};

struct EpMeshConfig {
  /** FFN ranks in the group (F >= 2). */
  int numRanks = 2;
  /** This FFN rank. */
  int rank = 0;
  /** Host of each FFN rank [numRanks]. */
  std::vector<std::string> hosts;
  /** FFN rank f listens on basePort + f. */
  int basePort = 0;
  /** Address to bind; empty = hosts[rank] (every interface when that is not a local address). */
  std::string listenHost;
  /** A group peer silent this long inside a step fails the step. */
  int deadlineMs = 2500;
  /** How long form() waits for the other ranks (0 = forever). */
  int rendezvousTimeoutMs = 300000;
  /**
   * What every rank of the group must run, as readable text (topology, model shape, gate
   * placement, rendezvous id); a peer with another identity is refused naming both.
   */
  std::string identity;

  // Checks ranks, hosts and ports; throws CommError(kConfig).
  void validate() const;
};

// Bytes one rank sends to one peer in an exchange (valid until exchange() returns).
struct ByteSpan {
  const void* data = nullptr;
  size_t bytes = 0;
};

class EpMesh {
 public:
  // Binds the listener at once (a busy port fails here).
  explicit EpMesh(EpMeshConfig config);
  ~EpMesh();
  EpMesh(const EpMesh&) = delete;
  EpMesh& operator=(const EpMesh&) = delete;

  // Connects to every other rank (closing any previous links) and handshakes; throws
  // EpGroupError (kTimeout past timeoutMs: -1 = the configured one, 0 = forever;
  // kStopped when *stop is set; kConfig when a peer refuses or runs something else).
  void form(StopFlag stop, int timeoutMs = -1);
  bool formed() const { return formed_; }
  int rank() const { return config_.rank; }
  int numRanks() const { return config_.numRanks; }
  const std::string& listenAddress() const { return listener_.address(); }

  // The sockets of the links (to poll while idle; never read them directly) and the
  // rank each belongs to.
  std::vector<int> pollFds() const;
  const std::vector<int>& pollRanks() const { return pollRanks_; }
  // The link of pollRanks()[index] is readable: reads the step start waiting there.
  // False when it is a shutdown notice (*shutdownBy says who and why).
  bool absorbWake(size_t index, std::string* shutdownBy);
  // The step barrier: sends this rank's start (its stage count and the rows of each
  // stage) to every peer and reads every peer's not absorbed yet. Returns the group's
  // stage count (the largest), or 0 when a peer sent a shutdown notice (*shutdownBy
  // set); *groupRows, when given, is the largest stage row count of any rank.
  int beginStep(int numStages, std::string* shutdownBy, const int64_t rows[2] = nullptr, int64_t* groupRows = nullptr);
  // The step number beginStep started (0 after form()).
  uint64_t step() const { return step_; }

  // One all-to-all of (layer, stage) frames of `kind` (kEpDispatch / kEpCombine): posts
  // send[j] to every peer j != rank and receives every peer's frame into recv[j].
  // expectBytes: the exact size each peer must send (nullptr: any size up to maxBytes).
  void exchange(FrameKind kind, uint32_t layer, uint32_t stage, const std::vector<ByteSpan>& send,
                std::vector<std::vector<uint8_t>>& recv, const std::vector<size_t>* expectBytes, size_t maxBytes,
                StopFlag stop);

  // Every rank's blob (this rank's own at its index), for a device exchange's bootstrap:
  // every rank calls it at the same point after form(). Blobs are at most maxBytes.
  std::vector<std::vector<uint8_t>> allGather(const std::vector<uint8_t>& mine, size_t maxBytes, StopFlag stop);
  // A group peer whose link closed (EOF / reset: the process is gone), or -1. Never blocks.
  int closedPeer() const;

  // Tells every peer this rank stops (shutdown notice with the reason), then closes.
  void notifyShutdown(const std::string& reason);
  // Says goodbye (reason) to every peer and closes the links; the listener stays open.
  void close(const std::string& reason);
  void closeListener() { listener_.close(); }

 private:
  std::string peerName(int rank) const;
  void dial(int peer, Deadline deadline, StopFlag stop);
  void acceptHigherRanks(Deadline deadline, StopFlag stop);
  // Refusal reason for a hello (empty = admit).
  std::string checkHello(int from, int numRanks, const std::string& identity) const;
  TcpLink& link(int peer);
  // Runs f, turning a CommError into an EpGroupError that says which group it is.
  template <typename F>
  auto guarded(F&& f) -> decltype(f());
  void readStart(int peer, Deadline deadline, StopFlag stop, std::string* shutdownBy);

  EpMeshConfig config_;
  Listener listener_;
  std::vector<std::unique_ptr<TcpLink>> links_;  // [numRanks], null at this rank
  std::vector<int> pollRanks_;                   // ranks of pollFds(), in order
  bool formed_ = false;
  uint64_t step_ = 0;
  std::vector<int> peerStages_;   // [numRanks] stage count each peer announced this step; 0 = not yet
  std::vector<int64_t> peerRows_;  // [numRanks] largest stage row count each peer announced this step
  std::vector<uint8_t> startBytes_;  // this rank's encoded start (posted, valid until flushed)
  std::string shutdownBy_;           // a shutdown notice absorbed while idle
};

}  // namespace afd::comm
