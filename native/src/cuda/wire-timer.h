// Timing events around a device data plane's transfers (sampled steps only: each costs
// two event records): per peer and direction, the start / end of the last timed transfer,
// read back as wire time. Shared by the NCCL and peer-memory role planes.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "comm/wire-time.h"

namespace afd::cuda {

class WireTimer {
 public:
  explicit WireTimer(int numPeers);
  ~WireTimer();
  WireTimer(const WireTimer&) = delete;
  WireTimer& operator=(const WireTimer&) = delete;

  // Records the start (before the transfer) / end (after it) on stream.
  void start(int peer, bool send, cudaStream_t stream);
  void end(int peer, bool send, cudaStream_t stream);
  // Microseconds between the last start / end of (peer, direction); 0 when none was recorded
  // or the events are not complete.
  uint64_t lastUs(int peer, bool send) const;
  // lastUs as a wire time: the operation's span (kOpSpan; it includes waiting for the
  // peer, and a device plane has no clock shared with the peer to time one direction by
  // itself), kUnavailable when nothing was recorded.
  afd::comm::WireTime span(int peer, bool send) const;

 private:
  size_t index(int peer, bool send) const { return static_cast<size_t>(peer) * 2 + (send ? 1 : 0); }
  std::vector<cudaEvent_t> start_, end_;
  std::vector<bool> recorded_;
};

}  // namespace afd::cuda
