// Errors of the connector. Every message names the peer (role, rank and address) and
// says what to do; the binding turns them into JS errors unchanged.
#pragma once
#include <string>

#include "core/error.h"

namespace afd::comm {

// Why a connector operation failed; lets the runtime tell a lost peer from bad input.
enum class CommErrorKind {
  kConfig,      // bad topology / rank / address given by the user
  kTimeout,     // a peer stayed silent past the step deadline or rendezvous timeout
  kPeerClosed,  // the peer closed the connection or the process died
  kProtocol,    // a frame failed its checks (magic, checksum, unexpected kind or tag)
  kShutdown,    // the peer shut down on purpose (shutdown flag, graceful stop)
  kStopped,     // this side was asked to stop while waiting
  kSystem,      // socket call failed (errno text included)
};

class CommError : public afd::Error {
 public:
  CommError(CommErrorKind kind, const std::string& message) : afd::Error(message), kind_(kind) {}
  CommErrorKind kind() const { return kind_; }
  // True when the peer is gone (closed, timed out or shut down): the link cannot be reused.
  bool peerLost() const {
    return kind_ == CommErrorKind::kTimeout || kind_ == CommErrorKind::kPeerClosed ||
           kind_ == CommErrorKind::kShutdown || kind_ == CommErrorKind::kProtocol;
  }

 private:
  CommErrorKind kind_;
};

}  // namespace afd::comm
