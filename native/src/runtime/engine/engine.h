// The engine of one role process: owns the backend, the role's weights, the model
// halves, the paged KV cache (attention / colocated) and the stats. The API is per step:
// step(plan) runs every layer for a batch and returns sampled tokens; the FFN role
// instead serves ffnForward(layer, ...) calls from the runtime's FFN server.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/backend.h"
#include "model/ffn-executor.h"
#include "model/local-ffn-executor.h"
#include "model/model.h"
#include "runtime/engine/graph-policy.h"
#include "runtime/engine/kv-cache.h"
#include "runtime/engine/kv-peer.h"
#include "runtime/engine/prompt-logprobs.h"
#include "runtime/engine/recurrent-state.h"
#include "runtime/engine/sampled-rows.h"
#include "runtime/engine/stats.h"
#include "runtime/engine/step-inputs.h"
#include "runtime/engine/step-plan.h"
#include "runtime/engine/token-mask-channel.h"
#include "runtime/engine/workspace.h"

namespace afd {

struct EngineOptions {
  BackendOptions backend;
  int kvBlockSize = 16;             // tokens per KV block
  int numKvBlocks = 0;              // 0: as many as fit in kvCacheBytes
  uint64_t kvCacheBytes = 512ull << 20;
  // > 0: size the KV pool (when numKvBlocks is 0) as this fraction of the device memory
  // free after the weights, less kKvWorkspaceReserveBytes for activations; backends that
  // do not track memory (CPU) use kvCacheBytes.
  double kvMemoryFraction = 0;
  // KV cache storage dtype; unset = the backend's activation dtype (f32 on the CPU, bf16
  // on CUDA: the cache layout of the tensor-core attention kernels).
  std::optional<DType> kvDtype;
  // CUDA graphs for decode steps (graph-policy.h); ignored on the CPU backend.
  GraphOptions graphs;
  // Models with gdn layers: recurrent-state slots (runtime/engine/recurrent-state.h), the
  // most sequences running at once; allocated before the KV cache is sized. Else unused.
  int numStateSlots = 64;
  // Prefill / decode disaggregation by peer memory (kv-peer.h): the KV cache and the
  // recurrent state in memory a process on this host can map (CPU: a file in kvShareDir).
  bool kvShareable = false;
  std::string kvShareDir;
};

// What JS needs to know about a loaded engine.
struct EngineInfo {
  std::string role, arch, backend;
  int threads = 0;
  int numLayers = 0;
  int64_t vocabSize = 0, hiddenSize = 0;
  int kvBlockSize = 0, numKvBlocks = 0;
  uint64_t kvBytesPerBlock = 0;
  // The KV layout a transfer receiver checks (kv-transfer.h): the cache dtype ("" for the
  // ffn role), the layers with a paged cache, K + V (2) or a latent row (1) per layer, and
  // the bytes of one token of one tensor of one layer.
  std::string kvDtype;
  int kvNumLayers = 0, kvTensorsPerLayer = 0;
  uint64_t kvRowBytes = 0;
  int numStateSlots = 0;           // 0: the model keeps no per-sequence state (no gdn layer)
  uint64_t stateBytesPerSlot = 0;  // conv + delta-rule state of one slot over the gdn layers
  uint64_t residentWeightBytes = 0;  // weights this role mapped / uploaded
  uint64_t numWeightTensors = 0;
};

// KV blocks of a new engine: numKvBlocks when set, else what fits in kvCacheBytes, or in
// kvMemoryFraction of freeBytes (device memory free after the weights; 0 = unknown).
// Throws when the fraction leaves no room for one block.
constexpr uint64_t kKvWorkspaceReserveBytes = 2ull << 30;  // activations, cuBLAS, graphs
constexpr uint64_t kMaxKvBlocks = 1u << 20;
int kvBlockCount(const EngineOptions& options, uint64_t bytesPerBlock, uint64_t freeBytes);

class Engine {
 public:
  Engine(ModelLoadSpec spec, const EngineOptions& options);
  ~Engine();

  // Colocated / attention roles. Thread-safe (one step at a time). A plan whose token mask
  // is deferred (defersTokenMask) runs its layers, then waits for provideTokenMask before
  // sampling (TokenMaskChannel::kTimeout at most).
  StepResult step(const StepPlan& plan);

  // Deferred token masks (token-mask-channel.h); thread-safe, none takes the step mutex.
  // The ticket of a deferred plan, taken when it is submitted (the binding does, so the
  // masks pair with steps in submission order; a plan without one takes it when it runs).
  int64_t reserveTokenMask(const StepPlan& plan);
  // The mask of the oldest submitted deferred step without one (copied; words: its
  // length); null withdraws it: that step fails with "token mask withdrawn".
  void provideTokenMask(const int32_t* mask, size_t words) { masks_.provide(mask, words); }
  // Fails every step waiting for a mask with `reason`.
  void withdrawTokenMasks(const std::string& reason) { masks_.withdrawAll(reason); }

  // FFN role (and colocated): hidden, out: host [T, H] in the backend's activation dtype;
  // routerLogits: host [T, E] f32 or null.
  void ffnForward(int layer, const void* hidden, int64_t numTokens, const float* routerLogits, void* out);
  DType activationDtype() const { return backend_->activationDtype(); }
  FfnModel* ffnModel() { return ffn_.get(); }
  std::mutex& mutex() { return mu_; }

  // Attention role: the executor that reaches the FFN half (remote connector, or a
  // LocalFfnExecutor over another engine's FfnModel). Not owned; must outlive steps.
  void setFfnExecutor(FfnExecutor* executor);

  // Prefill / decode disaggregation (kv-transfer.h has the byte layout); attention and
  // colocated roles. Each takes the step mutex, so it never races a step. Block ids must be
  // in [0, numKvBlocks) and distinct; slots in [0, numStateSlots) (models with gdn layers
  // only); an import's byte count must match the layout exactly.
  std::vector<uint8_t> exportKvBlocks(const std::vector<int32_t>& blockIds);
  void importKvBlocks(const std::vector<int32_t>& blockIds, const uint8_t* data, size_t bytes);
  std::vector<uint8_t> exportStateSlot(int slot);
  void importStateSlot(int slot, const uint8_t* data, size_t bytes);
  // The same by peer memory on one host (kv-peer.h): what a peer maps (null unless loaded
  // kvShareable), a fence before handing block ids out, and a peer's blocks / slot copied
  // into this engine's. These take no step mutex: the pulls copy beside a step in flight,
  // into blocks and a slot that no step holds (kv-peer.cc says why that is safe).
  std::optional<KvShareDescriptor> kvShareDescriptor() const;
  void kvFence();
  int openKvPeer(const KvShareDescriptor& d);
  void pullKvBlocks(int peer, const std::vector<int32_t>& srcIds, const std::vector<int32_t>& dstIds);
  void pullStateSlot(int peer, int srcSlot, int dstSlot);
  void closeKvPeer(int peer);

  // The device profiler's capture range around what follows (Backend::profilerRange); takes
  // the step mutex, so a range starts and stops between steps.
  void profilerRange(bool start) {
    std::lock_guard<std::mutex> lock(mu_);
    backend_->profilerRange(start);
  }

  const EngineInfo& info() const { return info_; }
  EngineStats& stats() { return *stats_; }
  Backend& backend() { return *backend_; }
  const ModelConfig& config() const { return spec_.config; }
  // Router placement the weights were loaded for (the AFD connector checks it at rendezvous).
  bool computeGateOnAttention() const { return spec_.computeGateOnAttention; }

 private:
  // Rows of one step as the layers see them (the plan's, or the padded graph layout).
  struct StepLayout {
    int numStages = 1;
    int seqBegin[3] = {0, 0, 0};  // sequences of stage s: [seqBegin[s], seqBegin[s + 1])
    int tokBegin[3] = {0, 0, 0};  // tokens of stage s
    int maxBlocksPerSeq = 0;      // block-table row width
    int maxQueryLen[2] = {0, 0};
    int maxContextLen[2] = {0, 0};
    // Device i32 per sequence (StepInputs): the gdn layers' state slots and hasState, and
    // their stage-relative token offsets (stage s at seqBegin[s] + s, S_s + 1 entries).
    int32_t* stateSlots = nullptr;
    int32_t* hasState = nullptr;
    int32_t* seqStarts = nullptr;
    // Device i32 inputs [T] (block tables [S, maxBlocksPerSeq]) of StepInputs.
    int32_t* ids = nullptr;         // graph steps: read by the captured embedding
    int32_t* sampleRows = nullptr;  // graph steps: read by the captured gather
    int32_t* positions = nullptr;
    int32_t* slots = nullptr;
    int32_t* tokenSeq = nullptr;
    int32_t* blockTables = nullptr;
    void setInputs(const StepInputs::Device& d) {
      ids = d.ids;
      sampleRows = d.sampleRows;
      positions = d.positions;
      slots = d.slots;
      tokenSeq = d.tokenSeq;
      blockTables = d.tables;
      stateSlots = d.stateSlots;
      hasState = d.hasState;
      seqStarts = d.seqStarts;
    }
  };
  // Attention + FFN of every layer and the final norm (hidden -> normed); beginStep /
  // endStep of the executor are the caller's.
  void runLayers(const StepLayout& layout, FfnExecutor& exec);
  // Samples the sampled rows of the plan from logits [numSampled, V] into result: logit
  // bias and penalties (in place), sampling, the sampled tokens' log-probabilities.
  void sampleInto(const StepPlan& plan, const Tensor& logits, const std::vector<int32_t>& samplePos, StepResult& result);
  // prompt-logprobs.cc: the LM head and log-probabilities of promptRows_ (built for this
  // step; deviceRows: their token rows on the device) into result.promptLogprobs.
  void promptLogprobsInto(const int32_t* deviceRows, int64_t numTokens, StepResult& result);
  // A step on the plan's own rows, no graph (prefill, mixed, or no bucket fits).
  void stepEager(const StepPlan& plan, StepLayout layout, StepResult& result);
  // graph-step.cc: a decode step through the graph cache (pad, warm up, capture
  // or replay); counts the hit / miss / capture.
  void stepGraphed(const StepPlan& plan, const DecodePadPlan& pad, StepResult& result);
  void runDecodeBody(const StepLayout& layout, int64_t paddedTokens);
  // The per-layer cache the attention module reads: K / V, or a gdn layer's state tensors.
  Tensor& layerCacheA(int layer);
  Tensor& layerCacheB(int layer);
  void dropStaleGraphs();
  // kv-transfer.cc: refuse a transfer on an engine without a KV cache / without state slots.
  void requireKvCache(const char* what) const;
  void requireStateSlots(const char* what) const;

  ModelLoadSpec spec_;
  EngineOptions options_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<WeightStore> store_;
  std::unique_ptr<AttentionModel> attention_;
  std::unique_ptr<FfnModel> ffn_;
  std::unique_ptr<PagedKvCache> kv_;
  std::unique_ptr<RecurrentState> state_;
  std::unordered_map<int, std::shared_ptr<const KvPeer>> kvPeers_;  // openKvPeer's mappings (peersMu_)
  int nextKvPeer_ = 1;
  std::mutex peersMu_;
  std::shared_ptr<const KvPeer> kvPeer(int peer, const char* what);  // the open peer, or a throw naming `what`
  std::unique_ptr<LocalFfnExecutor> localExecutor_;
  FfnExecutor* executor_ = nullptr;
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<EngineStats> stats_;
  EngineInfo info_;
  std::mutex mu_;
  // CUDA graphs of decode steps (on when the policy asks and the backend can capture).
  bool graphsOn_ = false;
  int padBlock_ = -1;  // reserved KV block no sequence owns: pad rows write and read it
  std::unordered_map<GraphKey, std::unique_ptr<CapturedGraph>, GraphKeyHash> graphs_;
  std::unordered_set<GraphKey, GraphKeyHash> warmed_;  // keys whose padded step ran eagerly once
  uint64_t graphEligibleSteps_ = 0;                    // decode steps that could run as graphs
  static constexpr uint64_t kGraphWireSampleSteps = 64;  // one of these runs eagerly to time the wire
  uint64_t graphBackendEpoch_ = 0, graphExecutorEpoch_ = 0;
  const FfnExecutor* graphExecutor_ = nullptr;
  // The i32 inputs of a step (host side, reused), uploaded to graphInputs_ for graph steps
  // (the address their graphs read) or eagerInputs_ for eager ones.
  StepInputs stepInputs_;
  // Host settings of the sampled rows and the prompt-logprob rows (reused across steps).
  SampledRows sampledRows_;
  PromptLogprobRows promptRows_;
  // Deferred token masks, and the running step's ticket (-1: its mask is not deferred).
  TokenMaskChannel masks_;
  int64_t stepMaskTicket_ = -1;
  Buffer graphInputs_, eagerInputs_;
  // KV blocks in use: blockStamps_[b] == blockStamp_ when block b was counted this step.
  std::vector<uint32_t> blockStamps_;
  uint32_t blockStamp_ = 0;
};

}  // namespace afd
