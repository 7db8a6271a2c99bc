// The CUDA backend: the engine's Backend interface on one GPU. Ops are enqueued on one
// stream (asynchronous); copyToHost(), sample() and logprobs() wait for them. Activations are bf16
// (activationDtype) with f32 accumulation; the residual stream, attention and logits
// stay f32; every op also takes f32 activations (conformance against the CPU). Weights
// stay in their checkpoint dtype (bf16 runs on the tensor-core kernels); GEMMs with many
// rows go through cuBLAS when it loads.
//
// The backend composes classes of one concept each and delegates to them: the stream and
// its capture state (stream-context.h), device memory and the scratch (device-memory.h),
// and the op families: row-wise ops (row-ops.h), logit processing and sampling
// (sampling-ops.h), attention (attention-ops.h), dense
// linear ops and cuBLAS (linear-ops.h), MoE (moe-ops.h), DeepSeek's ops (deepseek-ops.h)
// and the linear-attention (Gated DeltaNet) ops (linear-attention-ops.h).
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "cuda/attention-ops.h"
#include "cuda/deepseek-ops.h"
#include "cuda/device-memory.h"
#include "cuda/linear-attention-ops.h"
#include "cuda/linear-ops.h"
#include "cuda/moe-ops.h"
#include "cuda/row-ops.h"
#include "cuda/sampling-ops.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class CublasHandle;

class CudaBackend final : public Backend {
 public:
  // Throws when options are out of range (validateCudaOptions) or the device is missing.
  CudaBackend(int deviceIndex, const CudaOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  Device device() const override { return Device{DeviceKind::Cuda, ctx_.deviceIndex()}; }
  bool sharesHostMemory() const override { return false; }
  DType activationDtype() const override { return DType::BF16; }
  void setStepRows(int64_t rows) override { ctx_.setStepRows(rows); }

  void* allocate(size_t bytes) override { return memory_.allocate(bytes); }
  uint64_t freeMemoryBytes() const override { return memory_.freeMemoryBytes(); }
  void release(void* ptr) override { memory_.release(ptr); }
  void copyToDevice(void* dst, const void* hostSrc, size_t bytes) override { memory_.copyToDevice(dst, hostSrc, bytes); }
  void copyToHost(void* hostDst, const void* src, size_t bytes) override { memory_.copyToHost(hostDst, src, bytes); }
  void copyDevice(void* dst, const void* src, size_t bytes) override { memory_.copyDevice(dst, src, bytes); }
  void fillZero(void* dst, size_t bytes) override { memory_.fillZero(dst, bytes); }
  void synchronize() override { ctx_.synchronize(); }
  void copyDeviceBeside(const std::vector<DeviceCopy>& copies) override;
  void profilerRange(bool start) override;
  std::string sharedMemoryKind() const override { return "cuda"; }
  std::unique_ptr<SharedRegion> allocateShared(size_t bytes, const std::string& dir) override;
  std::unique_ptr<SharedRegion> openShared(const std::vector<uint8_t>& handle, size_t bytes) override;
  void fillRandom(Tensor& t, uint64_t key, float scale, float offset) override { rows_.fillRandom(t, key, scale, offset); }

  // Graph capture of the engine's decode step (cuda/step-graph.h). While capturing,
  // anything that would synchronize or (re)allocate throws a clear error instead.
  uint64_t allocationEpoch() const override { return ctx_.allocationEpoch(); }
  bool supportsGraphCapture() const override { return true; }
  void beginCapture() override { ctx_.beginCapture(); }
  std::unique_ptr<CapturedGraph> endCapture() override { return ctx_.endCapture(); }
  void abortCapture() noexcept override { ctx_.abortCapture(); }
  bool capturing() const { return ctx_.capturing(); }

  void embedding(const Tensor& ids, const Tensor& table, Tensor& out) override { rows_.embedding(ids, table, out); }
  void rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override { rows_.rmsNorm(x, weight, eps, out); }
  void addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) override {
    rows_.addRmsNorm(delta, residual, weight, eps, out);
  }
  void qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm, float eps,
                  const RopeParams& rope) override {
    attention_.qkNormRope(q, k, positions, qNorm, kNorm, eps, rope);
  }
  void writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache, Tensor& vCache) override {
    attention_.writeKvCache(k, v, slotMapping, kCache, vCache);
  }
  void qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping, const Tensor* qNorm,
                       const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q, Tensor& kCache,
                       Tensor& vCache) override {
    attention_.qkNormRopeCache(qkv, positions, slotMapping, qNorm, kNorm, eps, rope, q, kCache, vCache);
  }
  void pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache, const AttentionBatch& batch, float scale,
                      Tensor& out) override {
    attention_.pagedAttention(q, kCache, vCache, batch, scale, out);
  }
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override { linear_.matmul(x, w, bias, out); }
  void matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override {
    linear_.matmulAdd(x, w, bias, out);
  }
  void siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out) override {
    linear_.siluGatedMlp(x, gate, up, down, out);
  }
  void routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& expertIds, Tensor& expertWeights) override {
    moe_.routerTopK(logits, k, normTopk, expertIds, expertWeights);
  }
  void moeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                  const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend = nullptr) override {
    moe_.moeExperts(x, expertIds, expertWeights, experts, out, addend);
  }
  // moeExperts where expertIds may hold -1 (a masked pair: adds nothing; a row with every
  // pair masked gets 0): expert parallelism's owner side (cuda/ep/ep-ipc-exchange.h).
  // Always our grouped kernels (the cuBLAS grouped path needs every pair routed).
  void moeExpertsMasked(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                        const std::vector<ExpertWeights>& experts, Tensor& out) {
    moe_.moeExpertsMasked(x, expertIds, expertWeights, experts, out);
  }
  void moe(const Tensor& x, MoeArgs& args, Tensor& out) override { moe_.moe(x, args, out); }
  void add(const Tensor& a, const Tensor& b, Tensor& out) override { rows_.add(a, b, out); }
  void sigmoidGate(const Tensor& x, const Tensor& gate, Tensor& out) override { rows_.sigmoidGate(x, gate, out); }
  void gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) override { rows_.gatherRows(x, rows, out); }
  void processLogits(Tensor& logits, const LogitProcessing& p) override { sampling_.processLogits(logits, p); }
  void seedPenaltySlots(const PenaltySeeds& seeds, int64_t vocab) override { sampling_.seedPenaltySlots(seeds, vocab); }
  void sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) override {
    sampling_.sample(logits, params, outTokens);
  }
  void logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out) override {
    sampling_.logprobs(logits, req, out);
  }
  void mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions, const RopeParams& rope,
                   bool interleaved) override {
    deepseek_.mlaNormRope(q, kvA, kvNorm, eps, positions, rope, interleaved);
  }
  void writeLatentCache(const Tensor& kvA, const Tensor& slotMapping, Tensor& latentCache) override {
    deepseek_.writeLatentCache(kvA, slotMapping, latentCache);
  }
  void mlaAttention(const Tensor& q, const Tensor& latentCache, const Tensor& kvB, const AttentionBatch& batch, float scale,
                    Tensor& out) override {
    deepseek_.mlaAttention(q, latentCache, kvB, batch, scale, out);
  }
  void moeGroupedRoute(const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p, Tensor& expertIds,
                       Tensor& expertWeights) override {
    deepseek_.moeGroupedRoute(logits, scoreBias, p, expertIds, expertWeights);
  }
  void scatterRouting(const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense) override {
    deepseek_.scatterRouting(expertIds, expertWeights, dense);
  }
  void causalConv1d(const Tensor& x, const Tensor& weight, Tensor& convState, const LinearAttentionBatch& batch,
                    Tensor& out) override {
    linearAttention_.causalConv1d(x, weight, convState, batch, out);
  }
  void gatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                      Tensor& state, const LinearAttentionBatch& batch, Tensor& out) override {
    linearAttention_.gatedDeltaRule(q, k, v, g, beta, state, batch, out);
  }
  void rmsNormGated(const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out) override {
    linearAttention_.rmsNormGated(x, z, weight, eps, out);
  }
  void gdnGating(const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g,
                 Tensor& beta) override {
    linearAttention_.gdnGating(a, b, aLog, dtBias, g, beta);
  }
  void splitColumns(const Tensor& x, const std::vector<Tensor*>& outs) override { linearAttention_.splitColumns(x, outs); }

  cudaStream_t stream() const { return ctx_.stream(); }
  int multiProcessors() const { return ctx_.multiProcessors(); }
  const CudaOptions& options() const { return ctx_.options(); }
  // Null when cuBLAS did not load (then every GEMM runs on our kernels); see cublasError().
  const CublasHandle* cublas() const { return linear_.cublas(); }
  const std::string& cublasError() const { return linear_.cublasError(); }

 private:
  // Declaration order is construction order: the stream first, the op families last.
  StreamContext ctx_;
  DeviceMemory memory_;
  RowOps rows_;
  SamplingOps sampling_;
  AttentionOps attention_;
  LinearOps linear_;
  MoeOps moe_;
  DeepseekOps deepseek_;
  LinearAttentionOps linearAttention_;
};

}  // namespace afd::cuda
