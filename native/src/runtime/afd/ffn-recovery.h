// What the FFN role's loop does next (runtime/afd/ffn-loop.h): one transition function
// from the loop's phase and what just happened to the next phase, the state it reports,
// and what everyone is told. Every message of the loop's exits and recoveries is
// formatted here, in one place. Pure: the server applies the transition.
//
//   Gathering   --joined--> Serving      (the first rendezvous; the server is ready)
//   Serving     --lost-->   Regathering  (a peer of the block or of the FFN group is gone:
//                                         release everyone, gather the block again)
//   Regathering --joined--> Serving
//   Regathering --lost-->   Regathering  (e.g. a group peer refused this rank: retry after a pause)
//   any         --shutdown, stop, failure--> Ended
#pragma once
#include <string>

namespace afd {

// What an FFN server reports (FfnServer.state()).
enum class FfnServerState { kCreated, kRendezvous, kServing, kStopped, kFailed };

enum class FfnPhase { Gathering, Serving, Regathering, Ended };

struct FfnEvent {
  enum class Kind {
    Joined,             // the block (and the FFN group) gathered
    ShutdownRequested,  // an attention rank (or a group peer) sent the shutdown flag; detail: who
    Stopped,            // stop() ended serving
    LinkLost,           // a CommError: a peer left, timed out or refused; detail: what
    Failed,             // any other error (the FFN computation, a device plane); detail: what
  };
  Kind kind = Kind::Joined;
  std::string detail;
  bool fromGroup = false;      // LinkLost: the FFN group's link (EpGroupError), not the block's
  bool stopKind = false;       // LinkLost: the CommError says the wait was stopped (kStopped)
  bool stopRequested = false;  // stop() had been called when it happened
};

struct FfnTransition {
  FfnPhase next = FfnPhase::Ended;
  FfnServerState state = FfnServerState::kFailed;
  bool markReady = false;        // the first rendezvous is over (waitReady returns)
  std::string exitReason;        // Ended: why the loop ended (FfnServer.wait())
  std::string lastError;         // non-empty: becomes the server's lastError
  bool countLoss = false;        // a peer loss (peerLosses + 1)
  std::string peerMessage;       // non-empty: the goodbye to the block's attention ranks
  std::string groupMessage;      // non-empty: the FFN group is closed with it (or told of the shutdown)
  bool groupShutdown = false;    // the group is told this rank shut down, not that it failed
  bool abortExchange = false;    // end the device exchange's waits before closing the group
  bool pauseBeforeRetry = false; // wait a moment before gathering again
};

// rank: this FFN rank (messages name it).
FfnTransition nextTransition(FfnPhase phase, const FfnEvent& event, int rank);

}  // namespace afd
