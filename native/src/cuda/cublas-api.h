// The few cuBLAS entry points we use, resolved from libcublas at run time (no cuBLAS
// headers at build time). A missing library or symbol is an error naming it; the
// optional ones (grouped / batched GEMM) are checked when first called.
#pragma once
#include <cuda_runtime.h>
#include <library_types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace afd::cuda {

// What the loaded cuBLAS offers. Throws when cuBLAS itself does not load.
struct CublasInfo {
  std::string soname;             // e.g. "libcublas.so.13"
  std::string version;            // "13.1.0" (cublasGetProperty), "" when unknown
  bool groupedBatchedEx = false;  // cublasGemmGroupedBatchedEx (cuBLAS >= 12.5)
  bool batchedEx = false;         // cublasGemmBatchedEx
  bool stridedBatchedEx = false;  // cublasGemmStridedBatchedEx
};
CublasInfo cublasInfo();

// Host-side arrays of one cublasGemmGroupedBatchedEx call, reused between calls (no
// allocation once grown). Row-major terms as in CublasHandle::linear: every problem of a
// group computes out[rows, n] = x[rows, k] . w[n, k]^T with x and w rows contiguous.
class GroupedGemmPlan {
 public:
  void clear();
  // A group of `count` problems of one shape; ldOut is out's row stride in elements.
  void add(int rows, int n, int k, int ldOut, int count);
  int groups() const { return static_cast<int>(groupSize_.size()); }
  int problems() const { return problems_; }

 private:
  friend class CublasHandle;
  std::vector<int> transA_, transB_, m_, n_, k_, lda_, ldb_, ldc_, groupSize_;
  std::vector<float> alpha_, beta_;
  int problems_ = 0;
};

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

  // One cublasGemmGroupedBatchedEx call (cuBLAS >= 12.5): problem p (in the plan's group
  // order) reads xPtrs[p], wPtrs[p] and writes outPtrs[p]; the pointer arrays live in
  // device memory, [plan.problems()] each. bf16 in and out (cuBLAS has no f32 output for
  // bf16 inputs here), fp32 accumulation.
  void groupedLinear(const GroupedGemmPlan& plan, const void* const* xPtrs, const void* const* wPtrs,
                     void* const* outPtrs) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace afd::cuda
