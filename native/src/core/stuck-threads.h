// Threads the process had to leave behind inside a library call that may never return
// (ncclCommAbort with a dead peer). While any is running, a normal exit would tear the
// CUDA runtime down under it (a crash at exit), so the role process leaves with _exit
// instead (binding: stuckNativeThreads / exitNow).
#pragma once
#include <atomic>

namespace afd {

// The process-wide count; increment before such a call, decrement when it returns.
inline std::atomic<int>& stuckNativeThreads() {
  static std::atomic<int> count{0};
  return count;
}

}  // namespace afd
