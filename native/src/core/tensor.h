// Tensors: typed, shaped, contiguous (row-major, no strides) views over memory that
// someone else owns (a Buffer, an mmap'ed checkpoint range, a typed array). A Tensor
// never frees its data; views are cheap values.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>

#include "core/error.h"

namespace afd {

enum class DType : uint8_t { F32, F16, BF16, I32, U8 };

inline size_t dtypeBytes(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::U8: return 1;
  }
  return 0;
}

inline const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::U8: return "u8";
  }
  return "?";
}

// Parses "bf16" | "f16" | "f32" (the ModelLoadSpec spelling).
DType parseDType(const std::string& name);

enum class DeviceKind : uint8_t { Host, Cuda };

struct Device {
  DeviceKind kind = DeviceKind::Host;
  int index = 0;  // CUDA ordinal; 0 for host
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
};

constexpr int kMaxDims = 4;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> dims{};
  Device device{};

  Tensor() = default;
  Tensor(void* d, DType t, std::initializer_list<int64_t> shape, Device dev = {}) : data(d), dtype(t), device(dev) {
    AFD_CHECK(shape.size() <= kMaxDims, "tensor rank " << shape.size() << " exceeds " << kMaxDims);
    for (int64_t s : shape) dims[ndim++] = s;
  }

  bool empty() const { return data == nullptr; }
  int64_t dim(int i) const { return dims[i < 0 ? ndim + i : i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= dims[i];
    return n;
  }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtypeBytes(dtype); }
  // Elements in one row of dim 0 (product of the trailing dims).
  int64_t rowElems() const { return ndim == 0 ? 1 : numel() / dims[0]; }

  template <typename T> T* ptr() const { return static_cast<T*>(data); }

  // View of rows [begin, end) of dim 0.
  Tensor rows(int64_t begin, int64_t end) const {
    AFD_CHECK(ndim >= 1 && begin >= 0 && begin <= end && end <= dims[0],
              "row view [" << begin << ", " << end << ") out of range for dim0 " << (ndim ? dims[0] : 0));
    Tensor v = *this;
    v.dims[0] = end - begin;
    v.data = static_cast<char*>(data) + static_cast<size_t>(begin) * rowElems() * dtypeBytes(dtype);
    return v;
  }

  // Same bytes, new shape (numel must match).
  Tensor reshape(std::initializer_list<int64_t> shape) const {
    Tensor v(data, dtype, shape, device);
    AFD_CHECK(v.numel() == numel(), "reshape " << shapeString() << " -> " << v.shapeString() << " changes numel");
    return v;
  }

  std::string shapeString() const {
    std::string s = "[";
    for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  }
};

// bf16 / f16 <-> f32 on the host (round-to-nearest-even on the way down).
inline float bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint16_t f32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
float f16ToF32(uint16_t h);
uint16_t f32ToF16(float f);

}  // namespace afd
