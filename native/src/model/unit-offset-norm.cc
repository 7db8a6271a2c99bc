#include "model/unit-offset-norm.h"

#include <cstring>

#include "core/dummy-weights.h"

namespace afd {

bool isUnitOffsetNormSlot(const std::string& slot) {
  return slot == slot::kInputNorm || slot == slot::kPostAttentionNorm || slot == slot::kFinalNorm || slot == slot::kQNorm ||
         slot == slot::kKNorm;
}

namespace {

// A value as the tensor's dtype holds it.
float roundTo(DType dtype, float v) {
  switch (dtype) {
    case DType::BF16: return bf16ToF32(f32ToBf16(v));
    case DType::F16: return f16ToF32(f32ToF16(v));
    default: return v;
  }
}

float storedValue(DType dtype, const uint8_t* p, int64_t i) {
  uint16_t h;
  switch (dtype) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case DType::BF16: std::memcpy(&h, p + 2 * i, 2); return bf16ToF32(h);
    case DType::F16: std::memcpy(&h, p + 2 * i, 2); return f16ToF32(h);
    default: AFD_FAIL("norm weights must be f32, bf16 or f16, got " << dtypeName(dtype));
  }
}

}  // namespace

std::vector<float> unitOffsetNormValues(const TensorRef& ref, const uint8_t* mapped, uint64_t dummySeed) {
  int64_t n = 1;
  for (int64_t d : ref.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  const uint64_t key = dummyTensorKey(dummySeed, ref.name);
  for (int64_t i = 0; i < n; ++i) {
    const float w = mapped != nullptr ? storedValue(ref.dtype, mapped, i)
                                      : roundTo(ref.dtype, dummyValue(key, static_cast<uint64_t>(i), ref.dummyScale, ref.dummyOffset));
    out[i] = 1.0f + w;
  }
  return out;
}

}  // namespace afd
