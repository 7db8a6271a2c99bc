// The control plane: once per step, before the layer loop, the attention peers of an
// FFN rank's block agree on the step (every peer's per-stage token counts and flags).
// Protocol (hub at the FFN rank, so attention ranks need no addresses of their own):
//   1. each attention peer that wants to step publishes its own counts (StepRequest);
//   2. on the first request of a step, the FFN rank calls every other peer into the
//      step (StepCall); an idle peer answers with empty counts (one placeholder row);
//   3. once all peers have published, the FFN rank sends the merged ControlPayload to
//      every peer (StepGo) and the layer loop starts. All peers of a block step in lockstep.
// A request carrying kFlagShutdown ends the FFN rank's loop.
#pragma once
#include <cstdint>
#include <string>

#include "comm/control-payload.h"
#include "comm/deadline.h"

namespace afd::comm {

class AttentionControlPlane {
 public:
  virtual ~AttentionControlPlane() = default;
  // Publishes this rank's part of the next step and waits (up to the step deadline) for
  // the block's merged payload. stageTokens: tokens per stage (numStages entries).
  virtual void beginStep(const uint32_t* stageTokens, int numStages, uint32_t flags, ControlPayload* merged) = 0;
  // Idle rank: true when the FFN rank has called this rank into a step within timeoutMs
  // (answer with beginStep and empty counts). Throws when the FFN rank is lost.
  virtual bool pollStepCall(int timeoutMs) = 0;
  // Sends the shutdown flag (the FFN rank exits its loop) and closes the connection.
  virtual void shutdown(const std::string& reason) = 0;
  // Peer index of this rank within its block.
  virtual int peerIndex() const = 0;
  // After a step failed because the FFN rank's connection closed: the goodbye it sent
  // first (e.g. why it left), or "" when none was waiting. Never blocks long.
  virtual std::string pendingGoodbye() { return {}; }
};

class FfnControlPlane {
 public:
  virtual ~FfnControlPlane() = default;
  // Blocks (without deadline while the block is idle) until every peer has published
  // the next step, then announces it. Returns false when *stop was set or a peer sent
  // the shutdown flag (then *shutdownBy names it).
  virtual bool recvStep(ControlPayload* merged, StopFlag stop, std::string* shutdownBy) = 0;
};

}  // namespace afd::comm
