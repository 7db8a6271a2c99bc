// Reading weights of any checkpoint dtype as fp32 in device code. The codes are
// afd::DType's values (core/tensor.h): F32 = 0, F16 = 1, BF16 = 2.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>

namespace afd::cuda {

constexpr int kDtypeF32 = 0;
constexpr int kDtypeF16 = 1;
constexpr int kDtypeBf16 = 2;

__device__ __forceinline__ float loadAsFloat(const void* p, int dtype, size_t i) {
  switch (dtype) {
    case kDtypeF32: return static_cast<const float*>(p)[i];
    case kDtypeF16: return __half2float(static_cast<const __half*>(p)[i]);
    default: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
}

__device__ __forceinline__ void storeFromFloat(void* p, int dtype, size_t i, float v) {
  switch (dtype) {
    case kDtypeF32: static_cast<float*>(p)[i] = v; break;
    case kDtypeF16: static_cast<__half*>(p)[i] = __float2half(v); break;
    default: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v); break;
  }
}

}  // namespace afd::cuda
