#include "comm/control-payload.h"

#include <cstring>

namespace afd::comm {

// Layout (little-endian):
//   0  u32 magic "AFDC" (0x43444641)
//   4  u16 version (1)
//   6  u16 numStages (1..2)
//   8  u32 flags (ControlFlag bits)
//  12  u32 numPeers
//  16  u64 step
//  24  u32 tokenCounts[numPeers][2] (unused stage = 0)
namespace {
constexpr uint32_t kMagic = 0x43444641u;
constexpr uint16_t kVersion = 1;
constexpr size_t kFixedBytes = 24;

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

size_t controlPayloadBytes(int numPeers) { return kFixedBytes + static_cast<size_t>(numPeers) * kMaxStages * 4; }

void encodeControlPayload(const ControlPayload& p, std::vector<uint8_t>* out) {
  out->resize(controlPayloadBytes(p.numPeers));
  uint8_t* b = out->data();
  put(b + 0, kMagic, 4);
  put(b + 4, kVersion, 2);
  put(b + 6, static_cast<uint64_t>(p.numStages), 2);
  put(b + 8, p.flags, 4);
  put(b + 12, static_cast<uint64_t>(p.numPeers), 4);
  put(b + 16, p.step, 8);
  for (size_t i = 0; i < p.tokenCounts.size(); ++i) put(b + kFixedBytes + 4 * i, p.tokenCounts[i], 4);
}

std::string decodeControlPayload(const uint8_t* b, size_t bytes, ControlPayload* out) {
  if (bytes < kFixedBytes) return "control payload of " + std::to_string(bytes) + " bytes is shorter than its header";
  if (get(b, 4) != kMagic) return "control payload has a bad magic";
  if (get(b + 4, 2) != kVersion) return "control payload version " + std::to_string(get(b + 4, 2)) + " is not 1";
  int stages = static_cast<int>(get(b + 6, 2));
  if (stages < 1 || stages > kMaxStages) return "control payload has " + std::to_string(stages) + " stages (1 or 2)";
  uint64_t peers = get(b + 12, 4);
  if (peers < 1 || peers > 1024 || bytes != controlPayloadBytes(static_cast<int>(peers))) {
    return "control payload size " + std::to_string(bytes) + " does not match its " + std::to_string(peers) + " peers";
  }
  out->numStages = stages;
  out->flags = static_cast<uint32_t>(get(b + 8, 4));
  out->step = get(b + 16, 8);
  out->reset(static_cast<int>(peers));
  for (size_t i = 0; i < out->tokenCounts.size(); ++i) {
    out->tokenCounts[i] = static_cast<uint32_t>(get(b + kFixedBytes + 4 * i, 4));
  }
  for (int p = 0; p < out->numPeers; ++p) {
    for (int s = stages; s < kMaxStages; ++s) {
      if (out->tokens(p, s) != 0) return "control payload counts tokens in a stage beyond numStages";
    }
  }
  return {};
}

}  // namespace afd::comm
