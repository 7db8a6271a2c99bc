// Checks only the CPU ops make; the shared ones are core/op-checks.h.
#pragma once
#include "core/error.h"
#include "core/op-checks.h"
#include "core/tensor.h"

namespace afd::cpu {

// The CPU backend computes on f32 activations only (its exactness is the reference).
inline void checkCpuF32(const char* op, const char* what, const Tensor& t) {
  AFD_CHECK(t.dtype == DType::F32, op << ": " << what << " is " << dtypeName(t.dtype)
                                      << "; the CPU backend runs f32 activations");
}

}  // namespace afd::cpu
