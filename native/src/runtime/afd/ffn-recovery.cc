#include "runtime/afd/ffn-recovery.h"

namespace afd {

namespace {

// The loop ends: the block and the FFN group are told why.
FfnTransition ended(FfnServerState state, const std::string& reason, const std::string& peerMessage,
                    const std::string& rankName) {
  FfnTransition t;
  t.next = FfnPhase::Ended;
  t.state = state;
  t.exitReason = reason;
  if (state == FfnServerState::kFailed) t.lastError = reason;
  t.peerMessage = peerMessage;
  // The group cannot step without this rank: a shutdown stops it too, anything else fails its step.
  t.groupShutdown = state == FfnServerState::kStopped && reason.rfind("shutdown requested by", 0) == 0;
  t.groupMessage = reason.rfind(rankName, 0) == 0 ? reason : rankName + " " + reason;
  return t;
}

}  // namespace

FfnTransition nextTransition(FfnPhase phase, const FfnEvent& event, int rank) {
  using Kind = FfnEvent::Kind;
  const std::string rankName = "FFN rank " + std::to_string(rank);
  const std::string& what = event.detail;
  if (event.kind == Kind::Joined) {
    FfnTransition t;
    t.next = FfnPhase::Serving;
    t.state = FfnServerState::kServing;
    t.markReady = phase == FfnPhase::Gathering;
    return t;
  }
  if (event.kind == Kind::ShutdownRequested || event.kind == Kind::Stopped) {
    const std::string reason = event.kind == Kind::ShutdownRequested ? "shutdown requested by " + what : "stopped";
    return ended(FfnServerState::kStopped, reason, rankName + " " + reason, rankName);
  }
  if (event.kind == Kind::Failed) {
    // The first rendezvous ends with the error itself; later, the FFN computation (or a
    // plane) failed: this rank cannot serve, and says so.
    if (phase == FfnPhase::Gathering) return ended(FfnServerState::kFailed, what, rankName + " failed: " + what, rankName);
    const std::string reason = rankName + " failed: " + what;
    return ended(FfnServerState::kFailed, reason, reason, rankName);
  }
  // LinkLost.
  if (phase == FfnPhase::Gathering) {
    // Peers that joined (the FFN group may have failed after the block did) learn why at once.
    return ended(event.stopKind ? FfnServerState::kStopped : FfnServerState::kFailed, what, rankName + ": " + what, rankName);
  }
  if (event.stopRequested) {
    // Regathering: the block was already released when serving ended.
    return ended(FfnServerState::kStopped, "stopped", phase == FfnPhase::Serving ? rankName + " stopped" : "", rankName);
  }
  FfnTransition t;
  t.next = FfnPhase::Regathering;
  t.state = FfnServerState::kRendezvous;
  t.lastError = what;
  if (phase == FfnPhase::Serving) {
    // The block cannot step without every peer: release the others (they reconnect) and
    // gather the block again, however long that takes. With expert parallelism the FFN
    // group cannot either: close it, so every group peer fails its step now, too.
    t.countLoss = true;
    const std::string why = rankName + (event.fromGroup ? " lost its expert-parallel group (" : " lost a peer of its block (") +
                            what + ")";
    t.abortExchange = true;
    t.groupMessage = why;
    t.peerMessage = why + "; reconnect to rejoin";
  } else {
    // E.g. a group peer refused this rank (another model): release the block and try again.
    t.groupMessage = what;
    t.peerMessage = rankName + ": " + what + "; reconnect to rejoin";
    t.pauseBeforeRetry = true;
  }
  return t;
}

}  // namespace afd
