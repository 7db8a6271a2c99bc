// What a connector can say about the time one transfer spent between the ranks, and how
// it knows it. The console's per-layer wire maps show the basis next to the numbers, so
// a direction that cannot be timed by itself never passes for one that was.
#pragma once
#include <cstdint>

namespace afd::comm {

enum class WireBasis : uint8_t {
  /** Nothing timed yet (or the transport cannot tell). */
  kUnavailable = 0,
  /**
   * This direction by itself: arrival on the receiver less the sender's send stamp, both
   * read from CLOCK_REALTIME of one kernel (ranks on one host, network namespaces included).
   */
  kOneWay = 1,
  /**
   * No clock both ends share (ranks on different hosts): half the round trip less the
   * peer's hold. Both directions get the same number; neither is timed by itself.
   */
  kRoundTripHalf = 2,
  /**
   * Device events around the send / receive operation on the stream (NCCL, peer memory):
   * includes waiting for the peer to post its side (a receive spans the peer's compute),
   * so it is an upper bound, not a one-way wire time.
   */
  kOpSpan = 3,
};

// "one-way", "round-trip/2", "op-span", "unavailable" (the RankStats wireBasis names).
const char* wireBasisName(WireBasis basis);

// One timed transfer of a data plane.
struct WireTime {
  /** Microseconds (0 when basis is kUnavailable). */
  uint64_t us = 0;
  WireBasis basis = WireBasis::kUnavailable;
  /** The transfer it timed is known: (layer, stage) say which; otherwise it is the most recent one. */
  bool tagged = false;
  uint32_t layer = 0;
  uint32_t stage = 0;
};

// CLOCK_REALTIME in nanoseconds: the send stamps' clock (one per kernel, not offset by time namespaces).
uint64_t wallClockNs();
// This kernel's clock identity: a hash of /proc/sys/kernel/random/boot_id, so two ranks
// compare equal exactly when they read one CLOCK_REALTIME. Without a boot id, a value
// unique to this process (no peer matches it: the link falls back to round trips).
uint64_t hostClockDomain();

}  // namespace afd::comm
