// Block-wide arg-max over (value, id) pairs: larger value first, lower id on ties. The
// sampler's greedy pick and the log-probability rows' top k both use it, so the two
// order tokens exactly as the CPU backend does.
#pragma once
#include <cuda_runtime.h>

namespace afd::cuda {

struct Best {
  float value;
  int id;
};

// b when it comes first in the order, else a (NaN values never win).
__device__ __forceinline__ Best better(Best a, Best b) {
  return (b.value > a.value || (b.value == a.value && b.id < a.id)) ? b : a;
}

// The first pair of the block in that order; every thread gets it. scratch: 32 entries.
__device__ __forceinline__ Best blockArgmax(Best mine, Best* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    Best other{__shfl_xor_sync(0xffffffffu, mine.value, off), __shfl_xor_sync(0xffffffffu, mine.id, off)};
    mine = better(mine, other);
  }
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = mine;
  __syncthreads();
  Best all = scratch[0];
  for (int i = 1; i < static_cast<int>(blockDim.x >> 5); ++i) all = better(all, scratch[i]);
  __syncthreads();
  return all;
}

}  // namespace afd::cuda
