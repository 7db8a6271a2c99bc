#include "cpu/kernels.h"

#include <immintrin.h>

namespace afd::cpu {
namespace {

bool hasAvx2Fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

__attribute__((target("avx2,fma"))) inline float hsum256(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
__attribute__((target("avx2,fma"))) inline __m256 load8(const uint16_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline float scalar(float v) { return v; }
inline float scalar(uint16_t v) { return bf16ToF32(v); }

// NX dot products of x rows against one weight row w (f32 or bf16 bits), sharing each
// weight load. Every output follows exactly the same operation sequence whatever NX is
// (two 8-lane accumulators over 16-element steps, hsum, then an fma tail), so a row's
// result never depends on how many rows were computed together (batch invariance).
template <int NX, typename W>
__attribute__((target("avx2,fma"))) void dotMultiAvx2(const float* const* x, const W* w, int64_t n, float* out) {
  __m256 a[NX], b[NX];
  for (int r = 0; r < NX; ++r) a[r] = b[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = load8(w + i), w1 = load8(w + i + 8);
    for (int r = 0; r < NX; ++r) {
      a[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + i), w0, a[r]);
      b[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + i + 8), w1, b[r]);
    }
  }
  for (int r = 0; r < NX; ++r) {
    float s = hsum256(_mm256_add_ps(a[r], b[r]));
    for (int64_t j = i; j < n; ++j) s = __builtin_fmaf(x[r][j], scalar(w[j]), s);
    out[r] = s;
  }
}

// Portable path (no FMA): 8 partial sums per row, same order for every NX.
template <typename W>
void dotMultiScalar(const float* const* x, int nx, const W* w, int64_t n, float* out) {
  for (int r = 0; r < nx; ++r) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += x[r][i + j] * scalar(w[i + j]);
    float s = 0;
    for (int j = 0; j < 8; ++j) s += acc[j];
    for (; i < n; ++i) s += x[r][i] * scalar(w[i]);
    out[r] = s;
  }
}

template <typename W>
void dotMulti(const float* const* x, int nx, const W* w, int64_t n, float* out) {
  if (!hasAvx2Fma()) return dotMultiScalar(x, nx, w, n, out);
  switch (nx) {
    case 1: return dotMultiAvx2<1>(x, w, n, out);
    case 2: return dotMultiAvx2<2>(x, w, n, out);
    case 3: return dotMultiAvx2<3>(x, w, n, out);
    default: return dotMultiAvx2<4>(x, w, n, out);
  }
}

__attribute__((target("avx2,fma"))) void axpyAvx2(float a, const float* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] = __builtin_fmaf(a, x[i], y[i]);
}

}  // namespace

float dot(const float* a, const float* b, int64_t n) {
  float out;
  dotMulti(&a, 1, b, n, &out);
  return out;
}

float dotBf16(const float* a, const uint16_t* b, int64_t n) {
  float out;
  dotMulti(&a, 1, b, n, &out);
  return out;
}

void dotRows(const float* const* x, int nx, const float* w, int64_t n, float* out) { dotMulti(x, nx, w, n, out); }
void dotRowsBf16(const float* const* x, int nx, const uint16_t* w, int64_t n, float* out) { dotMulti(x, nx, w, n, out); }

void axpy(float a, const float* x, float* y, int64_t n) {
  if (hasAvx2Fma()) return axpyAvx2(a, x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void convertElems(const void* src, DType t, int64_t offset, int64_t n, float* out) {
  switch (t) {
    case DType::F32: {
      const float* p = static_cast<const float*>(src) + offset;
      for (int64_t i = 0; i < n; ++i) out[i] = p[i];
      return;
    }
    case DType::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(src) + offset;
      for (int64_t i = 0; i < n; ++i) out[i] = bf16ToF32(p[i]);
      return;
    }
    case DType::F16: {
      const uint16_t* p = static_cast<const uint16_t*>(src) + offset;
      for (int64_t i = 0; i < n; ++i) out[i] = f16ToF32(p[i]);
      return;
    }
    default:
      AFD_FAIL("cannot convert " << dtypeName(t) << " to f32 (expected a float dtype)");
  }
}

void convertRow(const Tensor& w, int64_t row, float* out) {
  const int64_t cols = w.dim(-1);
  convertElems(w.data, w.dtype, row * cols, cols, out);
}

void storeElems(const float* src, DType t, void* dst, int64_t offset, int64_t n) {
  switch (t) {
    case DType::F32: {
      float* p = static_cast<float*>(dst) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = src[i];
      return;
    }
    case DType::BF16: {
      uint16_t* p = static_cast<uint16_t*>(dst) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = f32ToBf16(src[i]);
      return;
    }
    case DType::F16: {
      uint16_t* p = static_cast<uint16_t*>(dst) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = f32ToF16(src[i]);
      return;
    }
    default:
      AFD_FAIL("cannot store f32 as " << dtypeName(t));
  }
}

}  // namespace afd::cpu
