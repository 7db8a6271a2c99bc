// The control payload: sent once per step before the layer loop. It carries the
// per-stage token counts of every attention peer of one FFN rank's block and the step
// flags. Its binary layout is shared with native/src/testing/controlPayload.ts (see
// control-payload.cc for the byte offsets); both sides must change together. Over TCP
// each attention peer publishes a one-peer payload and the FFN rank answers with the
// merged block payload (see control-plane.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace afd::comm {

// Most stages a step can have (dual-batch overlap uses two).
constexpr int kMaxStages = 2;

// Step flag bits.
enum ControlFlag : uint32_t {
  kFlagWarmup = 1u << 0,        // warm-up step (buffers, kernels), results discarded
  kFlagGraphCapture = 1u << 1,  // the attention side captures a CUDA graph of this step
  kFlagGraphReplay = 1u << 2,   // the attention side replays a captured graph
  kFlagShutdown = 1u << 3,      // no step follows: the FFN rank stops its loop and exits
};

struct ControlPayload {
  /** Block step number (starts at 0, +1 per step). */
  uint64_t step = 0;
  /** ControlFlag bits. */
  uint32_t flags = 0;
  /** Stages of this step, 1 or 2. */
  int numStages = 1;
  /** Attention peers described (the block size; 1 in a single peer's request). */
  int numPeers = 0;
  /** [numPeers * kMaxStages] tokens of peer p in stage s at p * kMaxStages + s (0 = empty: one placeholder row crosses). */
  std::vector<uint32_t> tokenCounts;

  uint32_t tokens(int peer, int stage) const { return tokenCounts[static_cast<size_t>(peer) * kMaxStages + stage]; }
  void setTokens(int peer, int stage, uint32_t n) { tokenCounts[static_cast<size_t>(peer) * kMaxStages + stage] = n; }
  // Rows that cross the wire for (peer, stage): the token count, or 1 placeholder row when empty.
  uint32_t wireRows(int peer, int stage) const {
    uint32_t n = tokens(peer, stage);
    return n == 0 ? 1 : n;
  }
  // Sizes tokenCounts for numPeers (keeps capacity, so reuse does not allocate).
  void reset(int peers);
};

// Bytes of the encoded payload for numPeers peers and numStages stages.
size_t controlPayloadBytes(int numPeers, int numStages);
// The largest encoding for numPeers peers (buffer capacity).
inline size_t maxControlPayloadBytes(int numPeers) { return controlPayloadBytes(numPeers, kMaxStages); }
// Encodes into out (resized to controlPayloadBytes; reuse keeps capacity).
void encodeControlPayload(const ControlPayload& p, std::vector<uint8_t>* out);
// Decodes and validates; returns an empty string or what is wrong.
std::string decodeControlPayload(const uint8_t* data, size_t bytes, ControlPayload* out);

}  // namespace afd::comm
