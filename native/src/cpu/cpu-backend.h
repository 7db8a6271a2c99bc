// The CPU backend: host memory, ops threaded over one ThreadPool, f32 math.
#pragma once
#include <memory>

#include "core/backend.h"
#include "core/thread-pool.h"
#include "cpu/penalty-table.h"

namespace afd {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : pool_(threads) {}
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device{}; }
  bool sharesHostMemory() const override { return true; }
  int threads() const override { return pool_.size(); }

  void* allocate(size_t bytes) override;
  void release(void* ptr) override;
  void copyToDevice(void* dst, const void* src, size_t bytes) override;
  void copyToHost(void* dst, const void* src, size_t bytes) override;
  void copyDevice(void* dst, const void* src, size_t bytes) override;
  void fillZero(void* dst, size_t bytes) override;
  void synchronize() override {}
  std::string sharedMemoryKind() const override { return "cpu"; }
  std::unique_ptr<SharedRegion> allocateShared(size_t bytes, const std::string& dir) override;
  std::unique_ptr<SharedRegion> openShared(const std::vector<uint8_t>& handle, size_t bytes) override;
  void fillRandom(Tensor& t, uint64_t key, float scale, float offset) override;

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
  void routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& expertIds, Tensor& expertWeights) override;
  void moeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                  const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend = nullptr) override;
  void add(const Tensor& a, const Tensor& b, Tensor& out) override;
  void sigmoidGate(const Tensor& x, const Tensor& gate, Tensor& out) override;
  void gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) override;
  void processLogits(Tensor& logits, const LogitProcessing& p) override;
  void seedPenaltySlots(const PenaltySeeds& seeds, int64_t vocab) override { penalties_.seed(seeds, vocab); }
  void sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) override;
  void logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out) override;
  // DeepSeek (cpu/mla.cc, cpu/moe-route.cc).
  void mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions, const RopeParams& rope,
                   bool interleaved) override;
  void writeLatentCache(const Tensor& kvA, const Tensor& slotMapping, Tensor& latentCache) override;
  void mlaAttention(const Tensor& q, const Tensor& latentCache, const Tensor& kvB, const AttentionBatch& batch, float scale,
                    Tensor& out) override;
  void moeGroupedRoute(const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p, Tensor& expertIds,
                Tensor& expertWeights) override;
  void scatterRouting(const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense) override;
  // Linear attention (cpu/linear-attention.cc).
  void causalConv1d(const Tensor& x, const Tensor& weight, Tensor& convState, const LinearAttentionBatch& batch,
                    Tensor& out) override;
  void gatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                      Tensor& state, const LinearAttentionBatch& batch, Tensor& out) override;
  void rmsNormGated(const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out) override;
  void gdnGating(const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g,
                 Tensor& beta) override;
  void splitColumns(const Tensor& x, const std::vector<Tensor*>& outs) override;

 private:
  ThreadPool pool_;
  cpu::PenaltyTable penalties_;
};

}  // namespace afd
