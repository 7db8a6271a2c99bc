#include "model/rope-table.h"

#include <algorithm>
#include <cmath>

namespace afd {

std::vector<float> ropeInvFreq(const ModelConfig& c) {
  // Partial RoPE (rotaryDim < headDim) is RoPE over rotaryDim dims: transformers builds
  // inv_freq with dim = head_dim * partial_rotary_factor.
  const int64_t dim = c.rotaryDim;
  const int64_t half = dim / 2;
  const RopeScaling& s = c.ropeScaling;
  std::vector<float> inv(half);
  // base ** (arange(0, dim, 2) / dim), in f32 like torch.
  std::vector<float> posFreq(half);
  for (int64_t i = 0; i < half; ++i)
    posFreq[i] = std::pow(static_cast<float>(c.ropeTheta), static_cast<float>(2 * i) / static_cast<float>(dim));
  for (int64_t i = 0; i < half; ++i) inv[i] = 1.0f / posFreq[i];
  // dynamic (NTK): transformers rescales only past the original context; within it the
  // frequencies are the default ones, which is what we serve.
  if (s.type == "default" || s.type == "dynamic") return inv;
  if (s.type == "linear") {
    for (float& f : inv) f = static_cast<float>(f / s.factor);
    return inv;
  }
  if (s.type == "llama3") {
    const double oldLen = static_cast<double>(s.originalMaxPositionEmbeddings);
    AFD_CHECK(oldLen > 0 && s.highFreqFactor != s.lowFreqFactor, "rope_scaling llama3 needs original_max_position_embeddings and low != high freq factors");
    const double lowWavelen = oldLen / s.lowFreqFactor, highWavelen = oldLen / s.highFreqFactor;
    for (float& f : inv) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen > lowWavelen) {
        f = static_cast<float>(f / s.factor);
      } else if (wavelen >= highWavelen) {
        const double smooth = (oldLen / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        f = static_cast<float>((1 - smooth) * f / s.factor + smooth * f);
      }
    }
    return inv;
  }
  if (s.type == "yarn") {
    const double maxPos = static_cast<double>(s.originalMaxPositionEmbeddings > 0 ? s.originalMaxPositionEmbeddings
                                                                                   : c.maxPositionEmbeddings);
    auto correctionDim = [&](double rotations) {
      return (static_cast<double>(dim) * std::log(maxPos / (rotations * 2 * M_PI))) / (2 * std::log(c.ropeTheta));
    };
    double low = std::max(0.0, std::floor(correctionDim(s.betaFast)));
    double high = std::min(static_cast<double>(dim - 1), std::ceil(correctionDim(s.betaSlow)));
    if (low == high) high += 0.001;
    for (int64_t i = 0; i < half; ++i) {
      const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      const double extrapFactor = 1 - ramp;
      const double extrap = 1.0 / posFreq[i], interp = 1.0 / (s.factor * posFreq[i]);
      inv[i] = static_cast<float>(interp * (1 - extrapFactor) + extrap * extrapFactor);
    }
    return inv;
  }
  AFD_FAIL("rope_scaling type \"" << s.type << "\" is not supported (supported: default, linear, llama3, yarn, dynamic)");
}

float ropeAttentionScale(const ModelConfig& c) {
  return c.ropeScaling.type == "yarn" ? static_cast<float>(c.ropeScaling.attentionFactor) : 1.0f;
}

}  // namespace afd
