// The CUDA backend: the engine's Backend interface on one GPU. Ops are enqueued on one
// stream (asynchronous); copyToHost() and sample() wait for them. Activations are bf16
// (activationDtype) with f32 accumulation; the residual stream, attention and logits
// stay f32; every op also takes f32 activations (conformance against the CPU). Weights
// stay in their checkpoint dtype (bf16 runs on the tensor-core kernels); GEMMs with many
// rows go through cuBLAS when it loads.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backend.h"
#include "cuda/device-buffer.h"
#include "cuda/moe.cuh"

namespace afd::cuda {

class CublasHandle;
class CublasExpertGemm;

class CudaBackend final : public Backend {
 public:
  // Throws when options are out of range (validateCudaOptions) or the device is missing.
  CudaBackend(int deviceIndex, const CudaOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  Device device() const override { return Device{DeviceKind::Cuda, deviceIndex_}; }
  bool sharesHostMemory() const override { return false; }
  DType activationDtype() const override { return DType::BF16; }
  void setStepRows(int64_t rows) override { stepRows_ = rows; }

  void* allocate(size_t bytes) override;
  uint64_t freeMemoryBytes() const override;
  void release(void* ptr) override;
  void copyToDevice(void* dst, const void* hostSrc, size_t bytes) override;
  void copyToHost(void* hostDst, const void* src, size_t bytes) override;
  void copyDevice(void* dst, const void* src, size_t bytes) override;
  void fillZero(void* dst, size_t bytes) override;
  void synchronize() override;
  void fillRandom(Tensor& t, uint64_t key, float scale, float offset) override;

  // Graph capture of the engine's decode step (cuda/step-graph.h). While capturing,
  // anything that would synchronize or (re)allocate throws a clear error instead.
  uint64_t allocationEpoch() const override;
  bool supportsGraphCapture() const override { return true; }
  void beginCapture() override;
  std::unique_ptr<CapturedGraph> endCapture() override;
  void abortCapture() noexcept override;
  bool capturing() const { return capturing_; }

  void embedding(const Tensor& ids, const Tensor& table, Tensor& out) override;
  void rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  void addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) override;
  void qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm, float eps,
                  const RopeParams& rope) override;
  void writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache,
                    Tensor& vCache) override;
  void qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping, const Tensor* qNorm,
                       const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q, Tensor& kCache,
                       Tensor& vCache) override;
  void pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache, const AttentionBatch& batch,
                      float scale, Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override;
  void matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override;
  void siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out) override;
  // MoE (cuda/cuda-moe-ops.cc): router top-k, routed experts, and the fused router + route.
  void routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& expertIds, Tensor& expertWeights) override;
  void moeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                  const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend = nullptr) override;
  // moeExperts where expertIds may hold -1 (a masked pair: adds nothing; a row with every
  // pair masked gets 0): expert parallelism's owner side (cuda/ep/ep-peer-exchange.h).
  // Always our grouped kernels (the cuBLAS grouped path needs every pair routed).
  void moeExpertsMasked(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                        const std::vector<ExpertWeights>& experts, Tensor& out);
  // Few bf16 rows: router GEMV, top-k and permutation in one launch (moeRouterRoute).
  void moe(const Tensor& x, MoeArgs& args, Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, Tensor& out) override;
  void gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) override;
  void sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) override;
  // DeepSeek (cuda/cuda-deepseek-ops.cc): MLA prologue and latent cache write
  // (mla-prologue.cuh), absorbed MLA attention (mla-attention.cuh), grouped router and
  // routing scatter (deepseek-route.cuh).
  void mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions, const RopeParams& rope,
                   bool interleaved) override;
  void writeLatentCache(const Tensor& kvA, const Tensor& slotMapping, Tensor& latentCache) override;
  void mlaAttention(const Tensor& q, const Tensor& latentCache, const Tensor& kvB, const AttentionBatch& batch, float scale,
                    Tensor& out) override;
  void moeGroupedRoute(const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p, Tensor& expertIds,
                Tensor& expertWeights) override;
  void scatterRouting(const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense) override;

  cudaStream_t stream() const { return stream_; }
  int multiProcessors() const { return multiProcessors_; }
  const CudaOptions& options() const { return options_; }
  // Null when cuBLAS did not load (then every GEMM runs on our kernels); see cublasError().
  const CublasHandle* cublas() const { return cublas_.get(); }
  const std::string& cublasError() const { return cublasError_; }

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
  // x @ w^T into out (f32): our kernels for few rows, cuBLAS for many (f32 x as bf16 hi + lo).
  void linearInto(const Tensor& x, const Tensor& w, Tensor& out, bool accumulate);
  // Scratch of at least `bytes`, valid until the next call (grows; never shrinks).
  void* scratch(size_t bytes);
  // Device pointer tables [gate | up | down] x E for one expert list, built once.
  const void* const* expertTables(const std::vector<ExpertWeights>& experts);
  // Throws when a capture is in progress: `what` would synchronize or allocate.
  void refuseWhileCapturing(const char* what) const;
  // The row count kernel choices are made for (see Backend::setStepRows).
  int64_t shapeRows(int64_t rows) const { return rows > stepRows_ ? rows : stepRows_; }

  int deviceIndex_ = 0;
  CudaOptions options_;  // kernel choices (attention family and splits, expert GEMM)
  int multiProcessors_ = 0;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer cublasWorkspace_;
  std::unique_ptr<CublasHandle> cublas_;
  std::string cublasError_;
  DeviceBuffer scratch_;
  DeviceBuffer splitCounters_;
  DeviceBuffer routerCounter_;  // done counter of moeRouterRoute (zero between launches)
  struct ExpertTable {
    DeviceBuffer device;             // [gate | up | down] x E device pointers
    std::vector<const void*> host;   // the same pointers, to validate a cache hit
  };
  std::unordered_map<const void*, ExpertTable> expertTables_;
  // Allocation epoch: bumped by allocate/release, scratch growth and new expert tables;
  // a moved split-counter buffer (grown inside pagedAttention) bumps it when observed.
  uint64_t epoch_ = 0;
  int64_t stepRows_ = 0;
  bool capturing_ = false;
  // Device buffers come from the stream-ordered allocator (cudaMallocAsync / cudaFreeAsync
  // on stream_) where the device has memory pools: freeing one never waits for the device.
  bool streamOrdered_ = false;
  // MoE expert GEMMs on cuBLAS grouped GEMM when options_.expertGemm asks (expert-gemm-cublas.h).
  std::unique_ptr<CublasExpertGemm> cublasExperts_;
};

}  // namespace afd::cuda
