// A point in time after which a blocking connector call gives up. Infinite deadlines
// are used only where waiting forever is correct (an idle FFN rank waiting for work),
// and such waits still poll a stop flag.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace afd::comm {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  static Deadline afterMs(int64_t ms) { return Deadline(Clock::now() + std::chrono::milliseconds(ms)); }
  bool infinite() const { return at_ == Clock::time_point::max(); }
  bool passed() const { return !infinite() && Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, capMs]; capMs when infinite.
  int remainingMs(int capMs) const {
    if (infinite()) return capMs;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > capMs ? capMs : static_cast<int>(left);
  }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// Optional cooperative cancel flag polled by blocking waits (at least every 100 ms).
using StopFlag = const std::atomic<bool>*;

}  // namespace afd::comm
