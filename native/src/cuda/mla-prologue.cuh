// The MLA prologue on CUDA: RMSNorm of each token's latent with RoPE on the rope parts of
// the latent row and of every q head, and the write of the latent rows into the paged
// latent cache. Math as the CPU backend (cpu/mla.cc, cpu/row-math.h): the angle in f32,
// cos / sin in f64, the norm's inverse rms in f64.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// Largest qk_rope_head_dim the prologue takes (cos / sin of half of it in shared memory).
constexpr int kMlaMaxRopeDim = 1024;

struct MlaNormRopeArgs {
  float* q = nullptr;            // [rows, heads, nope + rope] f32, in place
  float* kvA = nullptr;          // [rows, latent + rope] f32, in place
  const void* kvNorm = nullptr;  // [latent] of normDtype
  int normDtype = 2;
  const int32_t* positions = nullptr;  // [rows]
  const float* invFreq = nullptr;      // [rope / 2]
  float attentionScale = 1.0f;         // multiplies cos and sin
  int rows = 0;
  int heads = 0;
  int nope = 0;
  int rope = 0;    // even, <= kMlaMaxRopeDim
  int latent = 0;
  bool interleaved = false;  // pairs (x[2i], x[2i+1]); else (x[i], x[i + rope / 2])
  float eps = 1e-6f;
};

void mlaNormRope(const MlaNormRopeArgs& args, cudaStream_t stream);

// cache[slot] = kvA[t] (converted to cacheDtype) with slot = slotMapping[t]; slots < 0
// (and >= numSlots) skip. kvA: [rows, width] f32; cache: [numSlots, width].
void writeLatentCache(const float* kvA, const int32_t* slotMapping, void* cache, int cacheDtype, int rows, int width,
                      int64_t numSlots, cudaStream_t stream);

}  // namespace afd::cuda
