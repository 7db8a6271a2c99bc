// The FFN role's daemon loop on a native thread (FfnLoop; JavaScript holds it as an
// FfnServer, through the binding's FfnServerWrap). It owns the FFN side of the connector:
// its block (ffn-block.h: the attention ranks it serves and how it gathers them), its
// stepper (ffn-stepper.h: one step, per layer and stage receive from every peer,
// concatenate along tokens, run the engine's FFN half, split and send each slice back),
// and the loop between them, whose every exit and recovery is one transition function
// (ffn-recovery.h). A lost peer ends the step: the block is told (goodbye) and gathered
// again, so a restarted rank rejoins. A shutdown flag from an attention rank (or stop())
// ends the loop cleanly. The FFN role has no scheduler: nothing here takes a StepPlan.
// With expert parallelism (AfdConnectorOptions.expertParallel, several FFN ranks) the
// FFN ranks also form a group (ep/ffn-group.h): gathering forms it before the block is
// acknowledged, every group step starts with the group's barrier (an idle rank is woken
// by it and calls its block in), MoE layers run through the group's exchange
// (ffn-expert-stage.h) for as many stages as the group's largest step, and a failure
// anywhere in the group fails the step on every rank (the group then forms again).
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/rendezvous.h"
#include "ep/ffn-group.h"
#include "runtime/afd/connector-options.h"
#include "runtime/afd/ffn-block.h"
#include "runtime/afd/ffn-expert-stage.h"
#include "runtime/afd/ffn-recovery.h"
#include "runtime/afd/ffn-stepper.h"
#include "runtime/engine/engine.h"

namespace afd {

class FfnLoop {
 public:
  using State = FfnServerState;
  struct Snapshot {
    State state = State::kCreated;
    int peersJoined = 0;
    int blockSize = 0;
    int firstAttentionRank = 0;  // the block is attention ranks [first, first + blockSize)
    std::string listenAddress;   // "host:port" actually bound
    std::string lastError;       // most recent peer loss or failure; empty when none
    uint64_t peerLosses = 0;
    std::string exitReason;      // why the loop ended (stopped / failed only)
  };

  // Binds the listening port at once, so a busy port is an error here, not later.
  FfnLoop(std::shared_ptr<Engine> engine, const AfdConnectorOptions& options);
  ~FfnLoop();

  // Starts the loop thread (rendezvous first).
  void start();
  // Blocks until the first rendezvous completed; throws its error (timeout, stop).
  void waitReady();
  // Blocks until the loop ended; returns the exit reason (shutdown flag, stop, failure).
  std::string waitExit();
  // Ends the loop (peers see a goodbye) and joins the thread. Idempotent.
  void stop();
  Snapshot snapshot() const;
  static const char* stateName(State s);
  // Expert parallelism: the group's counters and this rank's experts; null when off.
  EpFfnGroup* expertGroup() { return group_.get(); }

 private:
  // Phases until Ended: runs the phase, then applies nextTransition of what happened.
  void loop();
  // Gathers (Gathering, Regathering) or serves (Serving) and says how it ended.
  FfnEvent runPhase(FfnPhase phase);
  // Gathers the block (forming the FFN group inside), then the step graphs follow the new plane.
  void gather(int timeoutMs);
  // Serves steps until the shutdown flag (true, *by = who) or stop (false). Throws CommError on a lost peer.
  bool serve(std::string* by);
  void apply(const FfnTransition& t);
  // The loop ended: the listeners close, the FFN group is closed or told of the shutdown.
  void finish(const FfnTransition& t);

  std::shared_ptr<Engine> engine_;
  comm::RendezvousConfig config_;
  std::unique_ptr<EpFfnGroup> group_;          // expert parallelism; null when off
  std::unique_ptr<FfnBlock> block_;
  std::unique_ptr<FfnExpertStage> expert_;     // expert parallelism; null when off
  std::unique_ptr<FfnStepper> stepper_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  comm::ControlPayload payload_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kCreated;
  bool ready_ = false;   // first rendezvous finished (ok or not)
  bool exited_ = false;
  std::string readyError_, exitReason_, lastError_;
  uint64_t peerLosses_ = 0;
};

}  // namespace afd
