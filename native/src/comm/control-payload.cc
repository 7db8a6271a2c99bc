#include "comm/control-payload.h"

#include <cstring>

namespace afd::comm {

// Layout (little-endian, no padding), identical to native/src/testing/controlPayload.ts:
//   0  u32 magic 0x43444641 ("AFDC")
//   4  u16 version (1)
//   6  u16 flags (ControlFlag bits; unknown bits rejected; capture and replay exclusive)
//   8  u16 numStages (1..8; this runtime uses 1..2)
//  10  u16 numPeers (1..1024)
//  12  u32 totalBytes = 24 + 4 * numStages * numPeers
//  16  u64 stepId (<= 2^53 - 1, so JS numbers hold it)
//  24  u32 counts[numStages][numPeers], stage-major
namespace {
constexpr uint32_t kMagic = 0x43444641u;
constexpr uint16_t kVersion = 1;
constexpr size_t kFixedBytes = 24;
constexpr uint32_t kKnownFlags = 0xf;
constexpr int kMaxWireStages = 8;
constexpr int kMaxPeers = 1024;
constexpr uint64_t kMaxStepId = (uint64_t{1} << 53) - 1;

void put(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
}  // namespace

void ControlPayload::reset(int peers) {
  numPeers = peers;
  tokenCounts.assign(static_cast<size_t>(peers) * kMaxStages, 0);
}

size_t controlPayloadBytes(int numPeers, int numStages) {
  return kFixedBytes + static_cast<size_t>(numPeers) * numStages * 4;
}

void encodeControlPayload(const ControlPayload& p, std::vector<uint8_t>* out) {
  out->resize(controlPayloadBytes(p.numPeers, p.numStages));
  uint8_t* b = out->data();
  put(b + 0, kMagic, 4);
  put(b + 4, kVersion, 2);
  put(b + 6, p.flags & kKnownFlags, 2);
  put(b + 8, static_cast<uint64_t>(p.numStages), 2);
  put(b + 10, static_cast<uint64_t>(p.numPeers), 2);
  put(b + 12, out->size(), 4);
  put(b + 16, p.step & kMaxStepId, 8);
  size_t offset = kFixedBytes;
  for (int s = 0; s < p.numStages; ++s) {
    for (int peer = 0; peer < p.numPeers; ++peer, offset += 4) put(b + offset, p.tokens(peer, s), 4);
  }
}

std::string decodeControlPayload(const uint8_t* b, size_t bytes, ControlPayload* out) {
  if (bytes < kFixedBytes) return "control payload of " + std::to_string(bytes) + " bytes is shorter than its 24-byte header";
  if (get(b, 4) != kMagic) return "control payload has a bad magic (the stream is out of sync)";
  if (get(b + 4, 2) != kVersion) {
    return "control payload version " + std::to_string(get(b + 4, 2)) + " is not supported (run the same AFD build on every rank)";
  }
  const uint32_t flags = static_cast<uint32_t>(get(b + 6, 2));
  if (flags & ~kKnownFlags) return "control payload has unknown flag bits";
  if ((flags & kFlagGraphCapture) && (flags & kFlagGraphReplay)) return "control payload sets both capture and replay";
  const int stages = static_cast<int>(get(b + 8, 2));
  const int peers = static_cast<int>(get(b + 10, 2));
  if (stages < 1 || stages > kMaxWireStages) return "control payload has " + std::to_string(stages) + " stages";
  if (stages > kMaxStages) {
    return "control payload has " + std::to_string(stages) + " stages but this runtime runs at most " + std::to_string(kMaxStages);
  }
  if (peers < 1 || peers > kMaxPeers) return "control payload has " + std::to_string(peers) + " peers (1..1024)";
  const size_t expected = controlPayloadBytes(peers, stages);
  if (get(b + 12, 4) != expected || bytes != expected) {
    return "control payload size " + std::to_string(bytes) + " does not match " + std::to_string(stages) + " stages x " +
           std::to_string(peers) + " peers";
  }
  out->numStages = stages;
  out->flags = flags;
  out->step = get(b + 16, 8);
  out->reset(peers);
  size_t offset = kFixedBytes;
  for (int s = 0; s < stages; ++s) {
    for (int peer = 0; peer < peers; ++peer, offset += 4) out->setTokens(peer, s, static_cast<uint32_t>(get(b + offset, 4)));
  }
  return {};
}

}  // namespace afd::comm
