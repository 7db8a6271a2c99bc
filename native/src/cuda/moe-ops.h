// The CUDA backend's MoE ops: router top-k, and the routed experts of moeExperts / moe:
// route (top-k + permutation; fused with the router GEMV for few bf16 rows), the expert
// GEMMs on our grouped kernels or on cuBLAS grouped GEMM (CudaOptions.expertGemm,
// expert-gemm-cublas.h), then the weighted combine. The expert pointer tables are built
// once per expert list; the per-call buffers are carved from the backend scratch.
#pragma once
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/backend.h"
#include "cuda/device-buffer.h"
#include "cuda/device-memory.h"
#include "cuda/linear-ops.h"
#include "cuda/moe.cuh"
#include "cuda/stream-context.h"

namespace afd::cuda {

class CublasExpertGemm;

class MoeOps {
 public:
  // linear: the router GEMM of moe() without the fused path, and the cuBLAS handle.
  MoeOps(StreamContext& ctx, DeviceMemory& memory, LinearOps& linear);
  ~MoeOps();

  void routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& expertIds, Tensor& expertWeights);
  void moeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                  const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend);
  // moeExperts where expertIds may hold -1 (see CudaBackend::moeExpertsMasked).
  void moeExpertsMasked(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                        const std::vector<ExpertWeights>& experts, Tensor& out);
  // Few bf16 rows: router GEMV, top-k and permutation in one launch (moeRouterRoute).
  void moe(const Tensor& x, MoeArgs& args, Tensor& out);

 private:
  // Scratch of one MoE call: the permutation, SiLU activations and permuted expert outputs.
  struct MoeScratch {
    MoePermutation perm;
    void* act = nullptr;
    float* expertOut = nullptr;
    int slots = 0;
  };
  MoeScratch moeScratch(int64_t T, int E, int64_t K, int64_t H, int64_t I);
  // Expert GEMMs of permuted rows (ours or cuBLAS grouped), then the weighted combine into out.
  void runExperts(const Tensor& x, const MoeScratch& s, const Tensor& expertWeights, const Tensor* addend,
                  const std::vector<ExpertWeights>& experts, int64_t K, Tensor& out, bool masked = false);
  // moeExperts / moeExpertsMasked: the permutation of expertIds, then runExperts.
  void permuteAndRunExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                            const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend, bool masked);
  // Device pointer tables [gate | up | down] x E for one expert list, built once.
  const void* const* expertTables(const std::vector<ExpertWeights>& experts);

  StreamContext& ctx_;
  DeviceMemory& memory_;
  LinearOps& linear_;
  DeviceBuffer routerCounter_;  // done counter of moeRouterRoute (zero between launches)
  struct ExpertTable {
    DeviceBuffer device;            // [gate | up | down] x E device pointers
    std::vector<const void*> host;  // the same pointers, to validate a cache hit
  };
  std::unordered_map<const void*, ExpertTable> expertTables_;
  // MoE expert GEMMs on cuBLAS grouped GEMM when the options ask (expert-gemm-cublas.h).
  std::unique_ptr<CublasExpertGemm> cublasExperts_;
};

}  // namespace afd::cuda
