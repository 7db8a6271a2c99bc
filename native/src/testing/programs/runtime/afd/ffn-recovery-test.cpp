// Unit tests of the FFN loop's transitions (runtime/afd/ffn-recovery.h): every exit and
// recovery, the state it reports and what the block and the FFN group are told. Built and
// run by runtime/afd/ffnRecovery.test.ts.
#include <string>

#include "runtime/afd/ffn-recovery.h"
#include "testing/programs/harness.h"

using namespace afd;

namespace {

FfnEvent event(FfnEvent::Kind kind, const std::string& detail = "") {
  FfnEvent e;
  e.kind = kind;
  e.detail = detail;
  return e;
}

FfnEvent lost(const std::string& detail, bool fromGroup = false, bool stopRequested = false, bool stopKind = false) {
  FfnEvent e = event(FfnEvent::Kind::LinkLost, detail);
  e.fromGroup = fromGroup;
  e.stopRequested = stopRequested;
  e.stopKind = stopKind;
  return e;
}

}  // namespace

TEST(first_gathering_makes_the_server_ready) {
  const FfnTransition t = nextTransition(FfnPhase::Gathering, event(FfnEvent::Kind::Joined), 1);
  CHECK(t.next == FfnPhase::Serving && t.state == FfnServerState::kServing && t.markReady);
  CHECK(t.peerMessage.empty() && t.groupMessage.empty());
  const FfnTransition again = nextTransition(FfnPhase::Regathering, event(FfnEvent::Kind::Joined), 1);
  CHECK(again.next == FfnPhase::Serving && !again.markReady);
}

TEST(a_failed_first_gathering_ends_with_its_error) {
  const FfnTransition t = nextTransition(FfnPhase::Gathering, lost("rendezvous timed out"), 2);
  CHECK(t.next == FfnPhase::Ended && t.state == FfnServerState::kFailed);
  CHECK(t.exitReason == "rendezvous timed out" && t.lastError == "rendezvous timed out");
  CHECK(t.peerMessage == "FFN rank 2: rendezvous timed out");
  CHECK(t.groupMessage == "FFN rank 2 rendezvous timed out" && !t.groupShutdown);
  const FfnTransition stopped = nextTransition(FfnPhase::Gathering, lost("stopped", false, true, true), 2);
  CHECK(stopped.state == FfnServerState::kStopped && stopped.lastError.empty());
  const FfnTransition failed = nextTransition(FfnPhase::Gathering, event(FfnEvent::Kind::Failed, "no GPU"), 2);
  CHECK(failed.state == FfnServerState::kFailed && failed.exitReason == "no GPU");
  CHECK(failed.peerMessage == "FFN rank 2 failed: no GPU");
}

TEST(a_shutdown_stops_the_block_and_the_group) {
  const FfnTransition t = nextTransition(FfnPhase::Serving, event(FfnEvent::Kind::ShutdownRequested, "attention rank 0"), 0);
  CHECK(t.next == FfnPhase::Ended && t.state == FfnServerState::kStopped);
  CHECK(t.exitReason == "shutdown requested by attention rank 0");
  CHECK(t.peerMessage == "FFN rank 0 shutdown requested by attention rank 0");
  CHECK(t.groupShutdown && t.groupMessage == "FFN rank 0 shutdown requested by attention rank 0");
  const FfnTransition stop = nextTransition(FfnPhase::Serving, event(FfnEvent::Kind::Stopped), 0);
  CHECK(stop.exitReason == "stopped" && stop.peerMessage == "FFN rank 0 stopped" && !stop.groupShutdown);
}

TEST(a_lost_peer_releases_everyone_and_gathers_again) {
  const FfnTransition t = nextTransition(FfnPhase::Serving, lost("attention rank 1 closed"), 0);
  CHECK(t.next == FfnPhase::Regathering && t.state == FfnServerState::kRendezvous);
  CHECK(t.countLoss && t.abortExchange && !t.pauseBeforeRetry);
  CHECK(t.lastError == "attention rank 1 closed");
  CHECK(t.groupMessage == "FFN rank 0 lost a peer of its block (attention rank 1 closed)");
  CHECK(t.peerMessage == "FFN rank 0 lost a peer of its block (attention rank 1 closed); reconnect to rejoin");
  const FfnTransition group = nextTransition(FfnPhase::Serving, lost("FFN rank 1 closed", true), 0);
  CHECK(group.groupMessage == "FFN rank 0 lost its expert-parallel group (FFN rank 1 closed)");
}

TEST(a_refused_regathering_retries_after_a_pause) {
  const FfnTransition t = nextTransition(FfnPhase::Regathering, lost("FFN rank 1 serves another model"), 0);
  CHECK(t.next == FfnPhase::Regathering && t.state == FfnServerState::kRendezvous);
  CHECK(t.pauseBeforeRetry && !t.countLoss && !t.abortExchange);
  CHECK(t.groupMessage == "FFN rank 1 serves another model");
  CHECK(t.peerMessage == "FFN rank 0: FFN rank 1 serves another model; reconnect to rejoin");
}

TEST(stop_ends_serving_and_regathering) {
  const FfnTransition serving = nextTransition(FfnPhase::Serving, lost("interrupted", false, true), 0);
  CHECK(serving.next == FfnPhase::Ended && serving.state == FfnServerState::kStopped && serving.exitReason == "stopped");
  CHECK(serving.peerMessage == "FFN rank 0 stopped");
  const FfnTransition regathering = nextTransition(FfnPhase::Regathering, lost("interrupted", false, true), 0);
  CHECK(regathering.exitReason == "stopped" && regathering.peerMessage.empty());
}

TEST(a_failure_ends_the_loop_naming_the_rank_once) {
  const FfnTransition t = nextTransition(FfnPhase::Serving, event(FfnEvent::Kind::Failed, "CUDA error"), 3);
  CHECK(t.next == FfnPhase::Ended && t.state == FfnServerState::kFailed);
  CHECK(t.exitReason == "FFN rank 3 failed: CUDA error" && t.lastError == t.exitReason);
  CHECK(t.peerMessage == t.exitReason && t.groupMessage == t.exitReason);
  const FfnTransition regathering = nextTransition(FfnPhase::Regathering, event(FfnEvent::Kind::Failed, "CUDA error"), 3);
  CHECK(regathering.next == FfnPhase::Ended && regathering.exitReason == "FFN rank 3 failed: CUDA error");
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
