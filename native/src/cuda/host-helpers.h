// Host-side helpers the CUDA backend's files share: the dtype code its kernels take
// (afd::DType's value, cuda/dtype-load.cuh) and the 256-byte alignment of the pieces
// carved from one scratch or workspace allocation.
#pragma once
#include <cstddef>

#include "core/tensor.h"

namespace afd::cuda {

inline int code(DType t) { return static_cast<int>(t); }

inline size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace afd::cuda
