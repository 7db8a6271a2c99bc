// Inner loops of the CPU backend: dot products and row conversion, with an AVX2+FMA
// path chosen at run time (the build targets x86-64-v2) and a portable fallback.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace afd::cpu {

// sum_i a[i] * b[i] (f32 accumulate).
float dot(const float* a, const float* b, int64_t n);
// a: f32, b: bf16 bits.
float dotBf16(const float* a, const uint16_t* b, int64_t n);
// out[r] = dot(x[r], w) for nx (1..4) x rows against one weight row, loading w once;
// bit-identical to calling dot / dotBf16 per row.
void dotRows(const float* const* x, int nx, const float* w, int64_t n, float* out);
void dotRowsBf16(const float* const* x, int nx, const uint16_t* w, int64_t n, float* out);
// y += a * x.
void axpy(float a, const float* x, float* y, int64_t n);
// Row `row` of a 2-D (or flattened) weight of any float dtype -> f32.
void convertRow(const Tensor& w, int64_t row, float* out);
// n elements of a float tensor at element offset -> f32.
void convertElems(const void* src, DType t, int64_t offset, int64_t n, float* out);
// f32 -> dtype (for KV caches stored in bf16 / f16).
void storeElems(const float* src, DType t, void* dst, int64_t offset, int64_t n);

}  // namespace afd::cpu
