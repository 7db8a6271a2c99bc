// The few cuBLAS entry points we use, resolved from libcublas at run time (no cuBLAS
// headers at build time). A missing library or symbol is an error naming it.
#pragma once
#include <cuda_runtime.h>
#include <library_types.h>

#include <cstddef>

namespace afd::cuda {

// Owns one cuBLAS handle bound to a stream, with a fixed workspace so that GEMMs can be
// captured into CUDA graphs (cuBLAS must not allocate during capture).
class CublasHandle {
 public:
  CublasHandle(cudaStream_t stream, void* workspace, size_t workspaceBytes);
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle();

  // Row-major out[rows, n] = alpha * x[rows, k] . w[n, k]^T + beta * out; x and w bf16,
  // out bf16 or fp32 (outType), fp32 accumulation. ldOut is out's row stride in elements.
  void linear(const void* x, const void* w, void* out, cudaDataType outType, int rows, int n, int k, int ldOut,
              float alpha, float beta) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace afd::cuda
