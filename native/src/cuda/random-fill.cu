#include "cuda/random-fill.cuh"

#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"

namespace afd::cuda {
namespace {

__device__ __forceinline__ uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fillKernel(void* data, int dtype, size_t count, uint64_t seed, float scale, float offset) {
  const uint64_t key = mix(seed);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(mix(key ^ i) >> 40) * (1.0f / 16777216.0f);
    storeFromFloat(data, dtype, i, offset + scale * (2.0f * u - 1.0f));
  }
}

}  // namespace

void fillRandom(void* data, int dtype, size_t count, uint64_t seed, float scale, float offset, cudaStream_t stream) {
  if (count == 0) return;
  const size_t blocks = (count + 255) / 256;
  fillKernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(data, dtype, count, seed,
                                                                                         scale, offset);
  AFD_CUDA_CHECK_LAUNCH("fillKernel");
}

}  // namespace afd::cuda
