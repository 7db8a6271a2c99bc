// MoE expert GEMMs of a routed batch through cuBLAS grouped GEMM
// (cublasGemmGroupedBatchedEx, cuBLAS >= 12.5): the alternative to our grouped
// tensor-core kernel (gemm.cuh `linear` with groupOffsets) for large eager batches.
//
//   gather  xPerm[r] = bf16(x[sortedSourceRow[r]])                 [rows, hidden]
//   grouped gate and up, two problems per active expert ->  gu      [rows, 2 * inter]
//   siluMul act = silu(gu[:, :inter]) * gu[:, inter:]              [rows, inter]
//   grouped down, one problem per active expert -> out             [rows, hidden]
//
// Output rows are in the permuted order of moePermute, exactly as our path writes them.
// cuBLAS's grouped GEMM takes bf16 output only for bf16 inputs, so an f32 `out` costs
// one more (widening) kernel. Differences from our path: gate and up are rounded to
// bf16 before SiLU, and the down output is bf16-rounded.
//
// NOT graph-capturable: grouped GEMM takes every problem's shape (the per-expert row
// counts) in host arrays. Unless the caller passes them, run() copies the expert offsets
// device -> host and waits for the stream: one synchronisation per MoE layer.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend-options.h"
#include "cuda/cublas-api.h"
#include "cuda/device-buffer.h"
#include "cuda/expert-gemm-kernels.cuh"
#include "cuda/moe.cuh"

namespace afd::cuda {

struct CublasExpertGemmArgs {
  const void* x = nullptr;                   // [tokens, hidden] source rows, f32 or bf16
  bool xIsF32 = false;
  const int32_t* sortedSourceRow = nullptr;  // [rows] device: token row of each permuted row
  const int32_t* expertOffsets = nullptr;    // [numExperts + 1] device (moePermute)
  const int32_t* activeExperts = nullptr;    // [>= active experts] device, ascending (moePermute)
  // [numExperts + 1] host copy of expertOffsets when the caller has it; null: run() copies
  // it device -> host and synchronises the stream.
  const int32_t* hostExpertOffsets = nullptr;
  ExpertWeightsView weights;                 // bf16
  int numExperts = 0;
  int rows = 0;  // routed (token, expert) pairs = tokens * topK
  int hidden = 0;
  int inter = 0;  // moe intermediate size
  void* out = nullptr;  // [rows, hidden], permuted order
  bool outIsF32 = true;
};

class CublasExpertGemm {
 public:
  // `cublas` must outlive this object and be bound to the stream passed to run().
  explicit CublasExpertGemm(const CublasHandle& cublas);
  ~CublasExpertGemm();
  CublasExpertGemm(const CublasExpertGemm&) = delete;
  CublasExpertGemm& operator=(const CublasExpertGemm&) = delete;

  // Allocates the scratch for up to `rows` routed rows now (run() grows it otherwise).
  void reserve(int rows, int numExperts, int hidden, int inter, bool outIsF32);

  // Gather, grouped gate/up, SiLU * up, grouped down (+ widening for f32 out).
  void run(const CublasExpertGemmArgs& args, cudaStream_t stream);

  // Experts with rows in the last run (from the host counts).
  int lastActiveExperts() const { return lastActive_; }

 private:
  struct Scratch {
    void* xPerm = nullptr;
    void* gu = nullptr;
    void* act = nullptr;
    void* outBf16 = nullptr;
    ExpertPointerArrays pointers;
  };
  const int32_t* hostOffsets(const CublasExpertGemmArgs& args, cudaStream_t stream);
  Scratch carve(const CublasExpertGemmArgs& args);

  const CublasHandle& cublas_;
  DeviceBuffer scratch_;
  int32_t* pinnedOffsets_ = nullptr;  // [pinnedCount_] page-locked
  int pinnedCount_ = 0;
  GroupedGemmPlan gateUpPlan_;
  GroupedGemmPlan downPlan_;
  int lastActive_ = 0;
};

// Arguments for the MoE ops' cuBLAS expert branch (cuda/moe-ops.h): activations x [tokens, hidden] (f32 or bf16),
// the permutation of moePermute, the device table [3 * numExperts] of expert weight
// pointers (gate | up | down, as MoeOps::expertTables builds it), f32 expertOut
// [rows, hidden] in the permuted order. Counts are copied to the host by run().
CublasExpertGemmArgs moeExpertGemmArgs(const void* x, bool xIsF32, const MoePermutation& perm, const void* const* table,
                                       int numExperts, int rows, int hidden, int inter, float* expertOut);

// The decision for one moeExperts call of `tokens` tokens: choice and minTokens are the
// backend's CudaOptions.expertGemm / expertGemmMinTokens (ExpertGemmChoice and
// kCublasExpertGemmMinTokens: core/backend-options.h). `auto` keeps our kernel below
// minTokens, while the stream is being captured (grouped GEMM cannot be), for non-bf16
// weights, hidden or inter not a multiple of 8, no cuBLAS (`cublas` null) or a cuBLAS
// without grouped GEMM; `cublas` throws in those cases instead of switching silently.
bool useCublasExpertGemm(ExpertGemmChoice choice, int tokens, int minTokens, int hidden, int inter, bool bf16Weights,
                         const CublasHandle* cublas, cudaStream_t stream);

}  // namespace afd::cuda
