// One framed TCP connection to one peer. Sends are posted to a fixed ring drained by a
// sender thread (so a rank can receive while its previous output is still being
// written, and nothing is allocated per message); receives run on the caller's thread
// with a deadline. A failure on either side marks the link broken and every later call
// rethrows the first error, which names the peer.
//
// Wire time, per direction (see comm/wire-time.h for the bases):
//  - One clock (both ends' clockDomain match: one kernel, e.g. ranks on one host): every
//    frame carries its send stamp (CLOCK_REALTIME when its first byte is written); the
//    receiver times a transfer from its first frame's stamp to its last frame's arrival
//    (kOneWay) and echoes that time in the headers it sends back, so each side knows both
//    directions, each by itself.
//  - No shared clock (different hosts): the peers take turns (a rank posts, then receives
//    the answer). Each frame carries how long its sender held the exchange (holdUs: from
//    the last frame it received to the first it sent back), so the side that posted first
//    measures the round trip from its first post to the answer's arrival less the peer's
//    hold: the time on the wire both ways. Half of it is reported for each direction
//    (kRoundTripHalf): the directions cannot be told apart.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm-error.h"
#include "comm/frame.h"
#include "comm/tcp-socket.h"
#include "comm/wire-time.h"

namespace afd::comm {

class TcpLink {
 public:
  // peer: how errors name the other side, e.g. "FFN rank 1 at 10.0.0.2:29501".
  // sendTimeoutMs: how long one frame may wait for the peer to read it.
  // clockDomain: this end's clock identity (tests give the two ends different ones to
  // play ranks on different hosts).
  TcpLink(Socket socket, std::string peer, int sendTimeoutMs, uint64_t clockDomain = hostClockDomain());
  ~TcpLink();
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  // Queues one frame; `payload` must stay valid and unchanged until flush() returns.
  // The header's byteLength must be set; its checksum is computed by the sender thread.
  void post(const FrameHeader& header, const void* payload);
  // Waits until every posted frame is on the wire; throws the first send error.
  void flush(Deadline deadline);
  // post + flush.
  void send(const FrameHeader& header, const void* payload, Deadline deadline) {
    post(header, payload);
    flush(deadline);
  }

  // Next frame header. A Goodbye frame is turned into CommError(kShutdown, reason).
  FrameHeader recvHeader(Deadline deadline, StopFlag stop, const char* what);
  // Payload of a header just received; checks its length and checksum.
  void recvPayload(const FrameHeader& header, void* dst, size_t capacityBytes, Deadline deadline, StopFlag stop,
                   const char* what);
  // A frame that must be exactly (kind, layer, stage, step) with `bytes` payload bytes.
  void recvExpected(FrameKind kind, uint32_t layer, uint32_t stage, uint64_t step, void* dst, size_t bytes,
                    Deadline deadline, StopFlag stop);
  // Opaque byte frames of the data-plane bootstrap (kBootstrap / kBootstrapReply), at
  // most kMaxBlobBytes. recvBlob waits for a frame of `kind`; any other kind or a larger
  // frame throws kProtocol naming `what` and ending with `hint`.
  static constexpr uint32_t kMaxBlobBytes = 65536;
  void sendBlob(FrameKind kind, const std::vector<uint8_t>& blob, Deadline deadline);
  std::vector<uint8_t> recvBlob(FrameKind kind, Deadline deadline, const char* what, const std::string& hint);
  // True when a frame (or EOF) is waiting, within timeoutMs.
  bool readable(int timeoutMs) const { return socket_.waitReadable(timeoutMs); }
  // The peer closed or reset the connection (see Socket::peerClosed).
  bool peerClosed() const { return socket_.peerClosed(); }

  // Sends a Goodbye frame (best effort, bounded) and closes the connection.
  void goodbye(const std::string& reason, int timeoutMs);
  // Closes the connection now and joins the sender thread. Idempotent.
  void close();
  // Shuts the socket down both ways (the peer reads EOF) without closing it; safe while
  // another thread is in a call on this link (that call fails). For a link already
  // given up, so the peer learns now instead of waiting on it.
  void hangUp() { socket_.shutdownBoth(); }
  bool broken() const;
  // The socket, for poll() over several links; never read or write it directly.
  int fd() const { return socket_.fd(); }
  const std::string& peer() const { return peer_; }
  // Rethrows the stored error when the link is broken.
  void throwIfBroken() const;
  // The most recent data transfer received on this link (the peer's send to its arrival
  // here), tagged with its layer and stage; basis kUnavailable before the first.
  WireTime recvWire() const;
  // The most recent data transfer this side sent whose time is known: one-way as the peer
  // measured and echoed it, or half the round trip; tagged with its layer and stage.
  WireTime sendWire() const;
  // Round trip less the peer's hold of the most recent exchange, microseconds (0 before one).
  uint64_t lastExchangeWireUs() const { return lastExchangeUs_.load(); }

 private:
  struct Pending {
    FrameHeader header;
    const void* payload = nullptr;
  };
  static constexpr size_t kRingSize = 32;

  void senderLoop();
  void fail(const CommError& err);
  // A frame arrived completely: ends an exchange this side started, starts a hold.
  void noteReceived(const FrameHeader& h);

  Socket socket_;
  std::string peer_;
  int sendTimeoutMs_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::array<Pending, kRingSize> ring_{};
  uint64_t posted_ = 0;   // frames queued so far
  uint64_t written_ = 0;  // frames fully written so far
  bool stopping_ = false;
  bool broken_ = false;
  CommErrorKind errorKind_ = CommErrorKind::kSystem;
  std::string error_;
  std::thread sender_;
  // Exchange timing (guarded by mu_, results atomic).
  bool received_ = false;        // a frame has arrived on this link
  bool awaitingReply_ = false;   // posted since the last arrival
  uint32_t holdUs_ = 0;          // carried by every frame posted in this turn
  std::chrono::steady_clock::time_point lastArrival_{};
  std::chrono::steady_clock::time_point exchangeStart_{};
  std::atomic<uint64_t> lastExchangeUs_{0};
  // Per-direction timing (guarded by mu_).
  uint64_t clockDomain_;
  uint64_t transferSentAtNs_ = 0;  // send stamp of the first frame of the transfer being received
  FrameHeader lastTransfer_{};     // the last data frame received (its kind, layer, stage, step)
  bool inTransfer_ = false;
  WireTime recvWire_{};
  WireTime sendWire_{};
};

}  // namespace afd::comm
