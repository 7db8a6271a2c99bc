// Device helpers for bf16 storage with fp32 math: 16-byte vector loads of 8 values.
#pragma once
#include <cuda_bf16.h>
#include <cstdint>

namespace afd::cuda {

using bf16 = __nv_bfloat16;

// 8 bf16 values in one 16-byte register group.
union Bf16x8 {
  uint4 raw;
  __nv_bfloat162 pair[4];
};

__device__ __forceinline__ void bf16x8ToFloat(const uint4& raw, float out[8]) {
  Bf16x8 v;
  v.raw = raw;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(v.pair[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ uint4 floatToBf16x8(const float in[8]) {
  Bf16x8 v;
#pragma unroll
  for (int i = 0; i < 4; ++i) v.pair[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
  return v.raw;
}

// The two reductions of the kernels (softmax max and sum, norms), as functors.
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// `op` over the 32 lanes of a warp (butterfly shuffles). Every lane gets the result.
template <typename Op>
__device__ __forceinline__ float warpReduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// `op` over the whole block, starting from `identity`; `scratch` holds at least 32 floats.
// Every thread gets the result.
template <typename Op>
__device__ __forceinline__ float blockReduce(float v, float* scratch, Op op, float identity) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int numWarps = (blockDim.x + 31) >> 5;
  v = warpReduce(v, op);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = identity;
  for (int i = 0; i < numWarps; ++i) total = op(total, scratch[i]);
  return total;
}

__device__ __forceinline__ float warpSum(float v) { return warpReduce(v, SumOp{}); }
__device__ __forceinline__ float warpMax(float v) { return warpReduce(v, MaxOp{}); }
__device__ __forceinline__ float blockSum(float v, float* scratch) { return blockReduce(v, scratch, SumOp{}, 0.0f); }
__device__ __forceinline__ float blockMax(float v, float* scratch) { return blockReduce(v, scratch, MaxOp{}, -INFINITY); }

}  // namespace afd::cuda
