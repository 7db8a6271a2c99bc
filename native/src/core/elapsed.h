// Microseconds since a steady-clock time point (step and exchange timings).
#pragma once
#include <chrono>
#include <cstdint>

namespace afd {

using SteadyClock = std::chrono::steady_clock;

inline uint64_t usSince(SteadyClock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0).count());
}

}  // namespace afd
