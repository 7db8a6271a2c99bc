#include "runtime/engine/stats.h"

#include <chrono>

namespace afd {

const char* ffnLoopStateName(FfnLoopState s) {
  switch (s) {
    case FfnLoopState::Idle: return "idle";
    case FfnLoopState::WaitingControl: return "waiting-control";
    case FfnLoopState::Receiving: return "receiving";
    case FfnLoopState::Computing: return "computing";
    case FfnLoopState::Sending: return "sending";
  }
  return "idle";
}

uint64_t steadyNowUs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void EngineStats::setFfnLoop(FfnLoopState s, int layer, int stage) {
  ffnLoopLayer = layer;
  ffnLoopStage = stage;
  ffnLoopSinceUs = steadyNowUs();
  ffnLoopState = static_cast<uint8_t>(s);
}

}  // namespace afd
