// The reproducible uniform of seeded sampling: u = hash(seed, position) in [0, 1).
// Every backend must use exactly this function (and the token choice rule documented
// in cpu/sampling.cc) so a seeded request gives the same tokens everywhere; the CUDA
// sampling kernel calls this same function on the device.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define AFD_HOST_DEVICE __host__ __device__
#else
#define AFD_HOST_DEVICE
#endif

namespace afd {

// splitmix64 finaliser over (seed << 32 | position); 24 significant bits.
AFD_HOST_DEVICE inline float samplingUniform(uint32_t seed, int32_t position) {
  uint64_t z = (static_cast<uint64_t>(seed) << 32) | static_cast<uint32_t>(position);
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

}  // namespace afd
