// AFD on GPUs: the fused decoder (MoeDecoder) cut at the attention / FFN seam, one half
// per GPU, joined by a GpuWire (NCCL or peer memory). Per step the attention side sends
// the control payload (the shared ControlPayload layout: per-stage token counts and the
// warmup / capture / replay / shutdown flags) through the wire, then runs (or replays)
// its captured step; the FFN side receives the payload, picks its loop-body graph by the
// per-stage token counts (capture on a miss or the capture flag, replay otherwise) and
// serves every layer. With two stages (DBO) each stage has its own comm stream and
// communicator, so stage 1's attention overlaps stage 0's round trip and FFN compute,
// and the FFN side overlaps receive, compute and send the same way.
//   wire per layer and stage: A->F xNorm bf16 [rows, H]; F->A f32 [rows, H] (MoE output,
//   no residual); the attention side adds it to the residual with the same combine
//   kernel as the colocated step, so greedy tokens are bit-identical.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "comm/deadline.h"
#include "cuda/device-buffer.h"
#include "cuda/moe-decoder.h"
#include "cuda/nccl/gpu-wire.h"
#include "cuda/step-graph.h"

namespace afd::cuda {

struct SplitCounters {
  uint64_t steps = 0, graphHits = 0, graphMisses = 0, graphCaptures = 0;
};

// Stage rows of one step: {rows0, rows1} (rows1 = 0 without DBO).
using StageRows = std::pair<int, int>;

class AfdSplitBase {
 public:
  // compute: the decoder's stream (CudaBackend::stream()); maxBatch: the decoder's.
  AfdSplitBase(MoeDecoder& decoder, cudaStream_t compute, int maxBatch, GpuWire& wire, int stepDeadlineMs);
  virtual ~AfdSplitBase();
  const SplitCounters& counters() const { return counters_; }
  // Per layer: sampled device time of the last sampled step, microseconds (attention:
  // send start -> FFN output received per stage 0; FFN: compute of stage 0).
  const std::vector<float>& sampledLayerUs() const { return layerUs_; }

 protected:
  void runGraphOrEager(const StageRows& key, bool graph, bool forceCapture, const std::function<void()>& enqueue);
  MoeDecoder& dec_;
  GpuWire& wire_;
  int stepDeadlineMs_;
  int maxBatch_;
  int hidden_;
  cudaStream_t compute_;
  cudaStream_t comm_[kWireStages] = {nullptr, nullptr};
  std::vector<cudaEvent_t> events_;  // fork/join events (timing disabled)
  size_t nextEvent_ = 0;
  cudaEvent_t nextSyncEvent();
  // Records an event on `from` and makes `to` wait for it (fork / join inside a capture).
  void link(cudaStream_t from, cudaStream_t to);
  void readTiming(int numLayers);
  cudaEvent_t done_ = nullptr;
  std::map<StageRows, std::unique_ptr<StepGraph>> graphs_;
  SplitCounters counters_;
  std::vector<float> layerUs_;
  std::vector<cudaEvent_t> timing_;  // [layers * 2] timing events of sampled eager steps
  bool timingPending_ = false;
};

class AfdAttentionSide : public AfdSplitBase {
 public:
  // gateOnAttention: the router runs here and its logits cross with the hidden states
  // (A->F message: xNorm bf16 [rows, H] then logits f32 [rows, E]); both sides must agree.
  AfdAttentionSide(MoeDecoder& decoder, cudaStream_t compute, int maxBatch, GpuWire& wire, int stepDeadlineMs,
                   bool gateOnAttention = false);
  // One decode step of `input` (rows padded to the decoder's bucket), split into two
  // stages when dbo; graph: capture / replay the step. Returns the sampled tokens.
  // Throws CommError (the wire is aborted) when the FFN side does not answer in time.
  std::vector<int32_t> step(const DecodeInput& input, bool dbo, bool graph, bool sampleWire);
  // Tells the FFN side to leave its loop.
  void shutdown();

 private:
  void sendControl(const StageRows& rows, uint32_t flags);
  void enqueueStep(const StageRows& rows, bool timing);
  DeviceBuffer identityPos_, ones_;  // moeCombine with topK 1, weight 1: residual += ffnOut exactly
  bool gateOnAttention_;
  DeviceBuffer gateStaging_;  // [2 stages][maxBatch * (2H + 4E) bytes]: xNorm copy + router logits
  size_t gateStageBytes_ = 0;
  std::vector<uint8_t> controlHost_;
  uint8_t* pinned_ = nullptr;  // control payload staging (pinned)
  uint64_t stepNumber_ = 0;
};

class AfdFfnSide : public AfdSplitBase {
 public:
  AfdFfnSide(MoeDecoder& decoder, cudaStream_t compute, int maxBatch, GpuWire& wire, int stepDeadlineMs,
             bool gateOnAttention = false);
  // Serves one step; false when the attention side sent the shutdown flag.
  // stop: polled while idle. Throws CommError when the attention side is lost mid-step.
  bool serveStep(afd::comm::StopFlag stop);

 private:
  void enqueueLoop(const StageRows& rows, bool timing);
  bool gateOnAttention_;
  DeviceBuffer out_;  // [2 stages][maxBatch, H] f32
  size_t stageOutBytes_ = 0;
  std::vector<uint8_t> controlHost_;
  uint8_t* pinned_ = nullptr;
};

}  // namespace afd::cuda
