// Shape and dtype checks of the op contracts (core/op-contracts.h), shared by every backend:
// messages name the op and the tensor.
#pragma once
#include <initializer_list>
#include <string>

#include "core/error.h"
#include "core/tensor.h"

namespace afd::contract {

// dims: expected extents, -1 = any.
inline void checkShape(const char* op, const char* what, const Tensor& t, std::initializer_list<int64_t> dims) {
  bool ok = t.ndim == static_cast<int>(dims.size());
  int i = 0;
  for (int64_t d : dims) {
    if (ok && d >= 0 && t.dims[i] != d) ok = false;
    ++i;
  }
  if (!ok) {
    std::string want = "[";
    i = 0;
    for (int64_t d : dims) want += (i++ ? ", " : "") + (d < 0 ? std::string("*") : std::to_string(d));
    AFD_FAIL(op << ": " << what << " has shape " << t.shapeString() << ", expected " << want << "]");
  }
  AFD_CHECK(t.data != nullptr || t.numel() == 0, op << ": " << what << " has no data");
}

inline void checkDType(const char* op, const char* what, const Tensor& t, DType want) {
  AFD_CHECK(t.dtype == want, op << ": " << what << " is " << dtypeName(t.dtype) << ", expected " << dtypeName(want));
}

inline void checkFloat(const char* op, const char* what, const Tensor& t) {
  AFD_CHECK(t.dtype == DType::F32 || t.dtype == DType::BF16 || t.dtype == DType::F16,
            op << ": " << what << " is " << dtypeName(t.dtype) << ", expected f32, bf16 or f16");
}

// An activation tensor: f32, or bf16 where the backend runs bf16 activations.
inline void checkAct(const char* op, const char* what, const Tensor& t) {
  AFD_CHECK(t.dtype == DType::F32 || t.dtype == DType::BF16,
            op << ": " << what << " is " << dtypeName(t.dtype) << ", expected f32 or bf16 activations");
}

}  // namespace afd::contract
