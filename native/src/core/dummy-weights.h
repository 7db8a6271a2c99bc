// The values of dummy weights (--load-format dummy, as in vLLM): a tensor is filled from
// a 64-bit key (derived from the load seed and the tensor's name, so every role that
// holds a tensor generates the same one) by a counter-based hash, identically on every
// backend: element i = fma(scale, 2u - 1, offset) with u = dummyUniform(key, i), 24
// significant bits (2u - 1 is exact; one fused multiply-add rounds once on host and device).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "core/sampling-rng.h"  // AFD_HOST_DEVICE

namespace afd {

AFD_HOST_DEVICE inline uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 24 bits.
AFD_HOST_DEVICE inline float dummyUniform(uint64_t key, uint64_t i) {
  return static_cast<float>(splitmix64(key ^ (i * 0xd1b54a32d192ed03ull)) >> 40) * (1.0f / 16777216.0f);
}

AFD_HOST_DEVICE inline float dummyValue(uint64_t key, uint64_t i, float scale, float offset) {
  return fmaf(scale, 2.0f * dummyUniform(key, i) - 1.0f, offset);
}

// The key of one tensor: the load seed mixed with an FNV-1a hash of its name.
inline uint64_t dummyTensorKey(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return splitmix64(seed ^ splitmix64(h));
}

}  // namespace afd
