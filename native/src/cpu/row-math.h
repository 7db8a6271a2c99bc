// Row-level math shared by the CPU norm, RoPE and MLA ops (one definition each, so
// every op rounds the same way).
#pragma once
#include <cmath>
#include <cstdint>

namespace afd::cpu {

// out = w * (x / sqrt(mean(x^2) + eps)), sum of squares in double.   x, out (may alias), w: [n].
inline void rmsNormRow(const float* x, const float* w, float eps, int64_t n, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (x[i] * inv);
}

// cos/sin of pos * invFreq[i] for i < half, times scale: the angle in f32 like HF
// (inv_freq.float() @ position.float()), cos/sin in double.
inline void ropeCosSin(int32_t position, const float* invFreq, int64_t half, float scale, float* cosv, float* sinv) {
  const float pos = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    const float angle = pos * invFreq[i];
    cosv[i] = static_cast<float>(std::cos(static_cast<double>(angle))) * scale;
    sinv[i] = static_cast<float>(std::sin(static_cast<double>(angle))) * scale;
  }
}

// Rotate-half RoPE of x[0, 2 * half): pairs (x[i], x[i + half]).
inline void rotateHalf(float* x, const float* cosv, const float* sinv, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float x1 = x[i], x2 = x[i + half];
    x[i] = x1 * cosv[i] - x2 * sinv[i];
    x[i + half] = x2 * cosv[i] + x1 * sinv[i];
  }
}

// Interleaved RoPE of x[0, 2 * half): pairs (x[2i], x[2i + 1]) (DeepSeek's complex layout).
inline void rotateInterleaved(float* x, const float* cosv, const float* sinv, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float x1 = x[2 * i], x2 = x[2 * i + 1];
    x[2 * i] = x1 * cosv[i] - x2 * sinv[i];
    x[2 * i + 1] = x2 * cosv[i] + x1 * sinv[i];
  }
}

}  // namespace afd::cpu
