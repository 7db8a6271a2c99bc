// RMSNorm fused with the residual add. Weights are read in their checkpoint dtype
// (afd::DType code: 0 f32, 1 f16, 2 bf16).
#pragma once
#include <cuda_runtime.h>

namespace afd::cuda {

// When delta is given: residual += delta. Then out = residual * rsqrt(mean(residual^2) + eps) * weight.
// residual: [rows, hidden] f32 (in/out; with no delta it is only read, and may be x);
// delta: [rows, hidden] f32 or bf16 (deltaIsBf16); out: [rows, hidden], f32 or bf16
// (outIsBf16). out may alias delta.
void addRmsNorm(float* residual, const void* delta, bool deltaIsBf16, const void* weight, int weightDtype, void* out,
                bool outIsBf16, int rows, int hidden, float eps, cudaStream_t stream);

}  // namespace afd::cuda
