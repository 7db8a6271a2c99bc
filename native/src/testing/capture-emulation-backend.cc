#include "testing/capture-emulation-backend.h"

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cpu/cpu-backend.h"

namespace afd {
namespace {

using Op = std::function<void()>;

class RecordedGraph final : public CapturedGraph {
 public:
  explicit RecordedGraph(std::vector<Op> ops) : ops_(std::move(ops)) {}
  void replay() override {
    for (Op& op : ops_) op();
  }

 private:
  std::vector<Op> ops_;
};

class CaptureEmulationBackend final : public Backend {
 public:
  explicit CaptureEmulationBackend(int threads) : inner_(std::make_unique<CpuBackend>(threads)) {}

  std::string name() const override { return "cpu"; }
  Device device() const override { return inner_->device(); }
  bool sharesHostMemory() const override { return true; }
  int threads() const override { return inner_->threads(); }

  void* allocate(size_t bytes) override {
    refuse("a device allocation");
    ++epoch_;
    return inner_->allocate(bytes);
  }
  void release(void* ptr) override {
    ++epoch_;
    inner_->release(ptr);
  }
  void copyToDevice(void* dst, const void* src, size_t bytes) override {
    refuse("a host-to-device copy");
    inner_->copyToDevice(dst, src, bytes);
  }
  void copyToHost(void* dst, const void* src, size_t bytes) override {
    refuse("a device-to-host copy");
    inner_->copyToHost(dst, src, bytes);
  }
  void copyDevice(void* dst, const void* src, size_t bytes) override {
    run([=] { inner_->copyDevice(dst, src, bytes); });
  }
  void fillZero(void* dst, size_t bytes) override {
    run([=] { inner_->fillZero(dst, bytes); });
  }
  void synchronize() override {
    refuse("a synchronize");
    inner_->synchronize();
  }
  void fillRandom(Tensor& t, uint64_t key, float scale, float offset) override {
    run([=, t = t]() mutable { inner_->fillRandom(t, key, scale, offset); });
  }

  uint64_t allocationEpoch() const override { return epoch_; }
  bool supportsGraphCapture() const override { return true; }
  void beginCapture() override {
    refuse("a nested beginCapture");
    capturing_ = true;
    recorded_.clear();
  }
  std::unique_ptr<CapturedGraph> endCapture() override {
    AFD_CHECK(capturing_, "graph capture emulation: endCapture without beginCapture");
    capturing_ = false;
    return std::make_unique<RecordedGraph>(std::move(recorded_));
  }
  void abortCapture() noexcept override {
    capturing_ = false;
    recorded_.clear();
  }

  void embedding(const Tensor& ids, const Tensor& table, Tensor& out) override {
    run([=, out = out]() mutable { inner_->embedding(ids, table, out); });
  }
  void rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override {
    run([=, out = out]() mutable { inner_->rmsNorm(x, weight, eps, out); });
  }
  void addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) override {
    run([=, residual = residual, out = out]() mutable { inner_->addRmsNorm(delta, residual, weight, eps, out); });
  }
  void qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm, float eps,
                  const RopeParams& rope) override {
    std::optional<Tensor> qn, kn;
    if (qNorm) qn = *qNorm;
    if (kNorm) kn = *kNorm;
    run([=, q = q, k = k]() mutable {
      inner_->qkNormRope(q, k, positions, qn ? &*qn : nullptr, kn ? &*kn : nullptr, eps, rope);
    });
  }
  void writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slots, Tensor& kCache, Tensor& vCache) override {
    run([=, kCache = kCache, vCache = vCache]() mutable { inner_->writeKvCache(k, v, slots, kCache, vCache); });
  }
  void qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slots, const Tensor* qNorm,
                       const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q, Tensor& kCache,
                       Tensor& vCache) override {
    std::optional<Tensor> qn, kn;
    if (qNorm) qn = *qNorm;
    if (kNorm) kn = *kNorm;
    run([=, q = q, kCache = kCache, vCache = vCache]() mutable {
      inner_->qkNormRopeCache(qkv, positions, slots, qn ? &*qn : nullptr, kn ? &*kn : nullptr, eps, rope, q, kCache, vCache);
    });
  }
  void pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache, const AttentionBatch& batch, float scale,
                      Tensor& out) override {
    run([=, out = out]() mutable { inner_->pagedAttention(q, kCache, vCache, batch, scale, out); });
  }
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override {
    std::optional<Tensor> b;
    if (bias) b = *bias;
    run([=, out = out]() mutable { inner_->matmul(x, w, b ? &*b : nullptr, out); });
  }
  void matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override {
    std::optional<Tensor> b;
    if (bias) b = *bias;
    run([=, out = out]() mutable { inner_->matmulAdd(x, w, b ? &*b : nullptr, out); });
  }
  void siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out) override {
    run([=, out = out]() mutable { inner_->siluGatedMlp(x, gate, up, down, out); });
  }
  void routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& ids, Tensor& weights) override {
    run([=, ids = ids, weights = weights]() mutable { inner_->routerTopK(logits, k, normTopk, ids, weights); });
  }
  void moeExperts(const Tensor& x, const Tensor& ids, const Tensor& weights, const std::vector<ExpertWeights>& experts,
                  Tensor& out, const Tensor* addend) override {
    const std::vector<ExpertWeights>* e = &experts;  // owned by the model: outlives the graph
    const std::optional<Tensor> add = addend != nullptr ? std::optional<Tensor>(*addend) : std::nullopt;
    run([=, out = out]() mutable { inner_->moeExperts(x, ids, weights, *e, out, add ? &*add : nullptr); });
  }
  void add(const Tensor& a, const Tensor& b, Tensor& out) override {
    run([=, out = out]() mutable { inner_->add(a, b, out); });
  }
  void gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) override {
    run([=, out = out]() mutable { inner_->gatherRows(x, rows, out); });
  }
  void lmHead(const Tensor& x, const Tensor& w, Tensor& logits) override {
    run([=, logits = logits]() mutable { inner_->lmHead(x, w, logits); });
  }
  void processLogits(Tensor& logits, const LogitProcessing& p) override {
    refuse("logit processing (it uploads host lists)");
    inner_->processLogits(logits, p);
  }
  void seedPenaltySlots(const PenaltySeeds& seeds, int64_t vocab) override {
    refuse("seeding penalty slots (it uploads host lists)");
    inner_->seedPenaltySlots(seeds, vocab);
  }
  void sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) override {
    refuse("sampling (it copies to the host)");
    inner_->sample(logits, params, outTokens);
  }
  void logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out) override {
    refuse("log-probabilities (they copy to the host)");
    inner_->logprobs(logits, req, out);
  }
  // DeepSeek ops.
  void mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions, const RopeParams& rope,
                   bool interleaved) override {
    run([=, q = q, kvA = kvA]() mutable { inner_->mlaNormRope(q, kvA, kvNorm, eps, positions, rope, interleaved); });
  }
  void writeLatentCache(const Tensor& kvA, const Tensor& slots, Tensor& cache) override {
    run([=, cache = cache]() mutable { inner_->writeLatentCache(kvA, slots, cache); });
  }
  void mlaAttention(const Tensor& q, const Tensor& cache, const Tensor& kvB, const AttentionBatch& batch, float scale,
                    Tensor& out) override {
    run([=, out = out]() mutable { inner_->mlaAttention(q, cache, kvB, batch, scale, out); });
  }
  void moeGroupedRoute(const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p, Tensor& ids,
                       Tensor& weights) override {
    std::optional<Tensor> bias;
    if (scoreBias) bias = *scoreBias;
    run([=, ids = ids, weights = weights]() mutable {
      inner_->moeGroupedRoute(logits, bias ? &*bias : nullptr, p, ids, weights);
    });
  }
  void scatterRouting(const Tensor& ids, const Tensor& weights, Tensor& dense) override {
    run([=, dense = dense]() mutable { inner_->scatterRouting(ids, weights, dense); });
  }

 private:
  void refuse(const char* what) const {
    AFD_CHECK(!capturing_, "graph capture emulation: " << what << " inside the captured decode step");
  }
  // Runs now, or records while capturing (tensor views are copied: same addresses on replay).
  void run(Op op) {
    if (capturing_) recorded_.push_back(std::move(op));
    else op();
  }

  std::unique_ptr<CpuBackend> inner_;
  uint64_t epoch_ = 0;
  bool capturing_ = false;
  std::vector<Op> recorded_;
};

}  // namespace

std::unique_ptr<Backend> createCaptureEmulationBackend(const BackendOptions& options) {
  return std::make_unique<CaptureEmulationBackend>(options.threads);
}

}  // namespace afd
