// Elementwise ops: adds (f32, bf16, a bias per row), f32 -> bf16 conversion and split,
// and the dummy-weight fill. Dtypes are afd::DType codes (0 f32, 1 f16, 2 bf16).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace afd::cuda {

// out = a + b over n f32 elements (out may alias).
void addF32(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream);
// out = bf16(float(a) + float(b)) over n bf16 elements (out may alias).
void addBf16(const void* a, const void* b, void* out, int64_t n, cudaStream_t stream);
// out[t, i] = x[t, i] * sigmoid(gate[t, i / (n / groups)]): x, out [rows, n] of dtype
// (out may alias x), gate [rows, groups] f32 (Qwen3-Next's gated attention and shared expert).
void sigmoidGate(const void* x, const float* gate, void* out, int dtype, int64_t rows, int64_t n, int64_t groups,
                 cudaStream_t stream);
// out[r, :] += bias: out [rows, n] f32, bias [n] of biasDtype.
void addBiasRows(float* out, const void* bias, int biasDtype, int rows, int n, cudaStream_t stream);
// Dummy weights: data[i] = dummyValue(key, i, scale, offset) (core/dummy-weights.h) in dtype.
void fillDummy(void* data, int dtype, size_t count, uint64_t key, float scale, float offset, cudaStream_t stream);
// hi = bf16(x), lo = bf16(x - hi): x = hi + lo to ~2^-16 relative (two bf16 GEMMs ~ one f32 GEMM).
void splitF32ToBf16(const float* x, void* hi, void* lo, int64_t n, cudaStream_t stream);
// out bf16 = x f32, n elements.
void convertF32ToBf16(const float* x, void* out, int64_t n, cudaStream_t stream);

}  // namespace afd::cuda
