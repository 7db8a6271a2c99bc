// The CUDA backend's dense linear ops: matmul and matmulAdd (x @ w^T into f32 out, +bias)
// and the SiLU-gated MLP (dense layers, DeepSeek's shared experts). Few rows run on our
// stream GEMMs (cuda/gemm.cuh), many bf16 rows on cuBLAS, whose handle and workspace
// live here (cuBLAS is dlopen()ed: when it does not load, every GEMM runs on our kernels).
#pragma once
#include <memory>
#include <string>

#include "core/backend.h"
#include "cuda/device-buffer.h"
#include "cuda/device-memory.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class CublasHandle;

class LinearOps {
 public:
  LinearOps(StreamContext& ctx, DeviceMemory& memory);
  ~LinearOps();

  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out);
  void matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out);
  void siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out);

  // Null when cuBLAS did not load; see cublasError().
  const CublasHandle* cublas() const { return cublas_.get(); }
  CublasHandle* cublas() { return cublas_.get(); }
  const std::string& cublasError() const { return cublasError_; }

 private:
  // x @ w^T into out (f32): our kernels for few rows, cuBLAS for many (f32 x as bf16 hi + lo).
  void linearInto(const Tensor& x, const Tensor& w, Tensor& out, bool accumulate);

  StreamContext& ctx_;
  DeviceMemory& memory_;
  DeviceBuffer cublasWorkspace_;
  std::unique_ptr<CublasHandle> cublas_;
  std::string cublasError_;
};

}  // namespace afd::cuda
