// Embedding lookup, RMSNorm fused with the residual add, and small elementwise ops.
// Weights are read in their checkpoint dtype (afd::DType code: 0 f32, 1 f16, 2 bf16).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// ids: [rows] i32; table: [vocab, hidden]; out: [rows, hidden] f32.
// Ids outside [0, vocab) give NaN rows (the host validates ids; NaN makes a bug loud).
void embeddingLookup(const int32_t* ids, const void* table, int tableDtype, float* out, int rows, int hidden, int vocab,
                     cudaStream_t stream);

// When delta is given: residual += delta. Then out = residual * rsqrt(mean(residual^2) + eps) * weight.
// residual: [rows, hidden] f32 (in/out; with no delta it is only read, and may be x);
// delta: [rows, hidden] f32 or bf16 (deltaIsBf16); out: [rows, hidden], f32 or bf16
// (outIsBf16). out may alias delta.
void addRmsNorm(float* residual, const void* delta, bool deltaIsBf16, const void* weight, int weightDtype, void* out,
                bool outIsBf16, int rows, int hidden, float eps, cudaStream_t stream);

// out = a + b over n f32 elements (out may alias).
void addF32(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream);
// out = bf16(float(a) + float(b)) over n bf16 elements (out may alias).
void addBf16(const void* a, const void* b, void* out, int64_t n, cudaStream_t stream);
// out[s] = x[rows[s]]: x [*, width], out [numRows, width], elements of elemBytes (4 or 2).
void gatherRows(const void* x, const int32_t* rows, void* out, int numRows, int width, int elemBytes,
                cudaStream_t stream);
// Dummy weights: data[i] = dummyValue(key, i, scale, offset) (core/dummy-weights.h) in dtype.
void fillDummy(void* data, int dtype, size_t count, uint64_t key, float scale, float offset, cudaStream_t stream);
// out[r, :] += bias: out [rows, n] f32, bias [n] of biasDtype.
void addBiasRows(float* out, const void* bias, int biasDtype, int rows, int n, cudaStream_t stream);

}  // namespace afd::cuda

namespace afd::cuda {
// out bf16 = x f32, n elements.
void convertF32ToBf16(const float* x, void* out, int64_t n, cudaStream_t stream);
// hi = bf16(x), lo = bf16(x - hi): x = hi + lo to ~2^-16 relative (two bf16 GEMMs ~ one f32 GEMM).
void splitF32ToBf16(const float* x, void* hi, void* lo, int64_t n, cudaStream_t stream);
}  // namespace afd::cuda
