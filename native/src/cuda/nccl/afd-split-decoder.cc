#include "cuda/nccl/afd-split-decoder.h"

#include <unistd.h>

#include <cstring>

#include "comm/comm-error.h"
#include "comm/control-payload.h"
#include "core/error.h"
#include "cuda/cuda-check.h"
#include "cuda/moe.cuh"

namespace afd::cuda {

using afd::comm::ControlPayload;
using afd::comm::Deadline;

namespace {
constexpr size_t kControlBytes = 256;  // >= controlPayloadBytes(1)
}

AfdSplitBase::AfdSplitBase(MoeDecoder& decoder, cudaStream_t compute, int maxBatch, GpuWire& wire, int stepDeadlineMs)
    : dec_(decoder),
      wire_(wire),
      stepDeadlineMs_(stepDeadlineMs),
      maxBatch_(maxBatch),
      hidden_(static_cast<int>(decoder.config().hiddenSize)),
      compute_(compute) {
  AFD_CHECK(afd::comm::maxControlPayloadBytes(1) <= kControlBytes, "control payload larger than its wire inbox");
  for (auto& s : comm_) AFD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  AFD_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  const int layers = decoder.config().numLayers;
  timing_.resize(static_cast<size_t>(layers) * 2);
  for (auto& e : timing_) AFD_CUDA_CHECK(cudaEventCreate(&e));
  layerUs_.assign(layers, 0.f);
}

AfdSplitBase::~AfdSplitBase() {
  // Bounded: after a lost peer the wire was aborted and the step's kernels return, but a
  // destructor must never hang the process on a stuck stream (then resources leak).
  for (int i = 0; i < 2000 && cudaStreamQuery(compute_) == cudaErrorNotReady; ++i) usleep(1000);
  if (cudaStreamQuery(compute_) == cudaErrorNotReady) return;
  cudaGetLastError();
  graphs_.clear();
  for (auto e : events_) cudaEventDestroy(e);
  for (auto e : timing_) cudaEventDestroy(e);
  if (done_) cudaEventDestroy(done_);
  for (auto s : comm_)
    if (s) cudaStreamDestroy(s);
}

cudaEvent_t AfdSplitBase::nextSyncEvent() {
  if (nextEvent_ == events_.size()) {
    cudaEvent_t e;
    AFD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
  return events_[nextEvent_++];
}

void AfdSplitBase::link(cudaStream_t from, cudaStream_t to) {
  cudaEvent_t e = nextSyncEvent();
  AFD_CUDA_CHECK(cudaEventRecord(e, from));
  AFD_CUDA_CHECK(cudaStreamWaitEvent(to, e, 0));
}

void AfdSplitBase::readTiming(int numLayers) {
  for (int l = 0; l < numLayers; ++l) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, timing_[2 * l], timing_[2 * l + 1]) == cudaSuccess) layerUs_[l] = ms * 1000.f;
  }
  cudaGetLastError();
}

void AfdSplitBase::runGraphOrEager(const StageRows& key, bool graph, bool forceCapture,
                                   const std::function<void()>& enqueue) {
  nextEvent_ = 0;
  ++counters_.steps;
  if (!graph) {
    ++counters_.graphMisses;
    enqueue();
    return;
  }
  auto it = graphs_.find(key);
  if (it != graphs_.end() && forceCapture) {
    graphs_.erase(it);
    it = graphs_.end();
  }
  if (it == graphs_.end()) {
    // One eager run first (both sides do it, so the wire stays in step): cuBLAS and the
    // driver finish lazy setup outside the capture. The replay recomputes the same step.
    enqueue();
    nextEvent_ = 0;
    it = graphs_.emplace(key, captureStreamGraph(compute_, "the AFD split step", enqueue)).first;
    ++counters_.graphCaptures;
  } else {
    ++counters_.graphHits;
  }
  it->second->replay();
}

// ---------------------------------------------------------------- attention side

AfdAttentionSide::AfdAttentionSide(MoeDecoder& decoder, cudaStream_t compute, int maxBatch, GpuWire& wire,
                                   int stepDeadlineMs, bool gateOnAttention)
    : AfdSplitBase(decoder, compute, maxBatch, wire, stepDeadlineMs),
      identityPos_("AFD combine identity", 4ull * maxBatch),
      ones_("AFD combine weights", 4ull * maxBatch),
      gateOnAttention_(gateOnAttention) {
  if (gateOnAttention_) {
    gateStageBytes_ = static_cast<size_t>(maxBatch) * (2 * hidden_ + 4 * decoder.config().numExperts);
    gateStaging_ = DeviceBuffer("AFD gate staging", 2 * gateStageBytes_);
  }
  std::vector<int32_t> ids(maxBatch);
  std::vector<float> ones(maxBatch, 1.0f);
  for (int i = 0; i < maxBatch; ++i) ids[i] = i;
  AFD_CUDA_CHECK(cudaMemcpy(identityPos_.data(), ids.data(), 4ull * maxBatch, cudaMemcpyHostToDevice));
  AFD_CUDA_CHECK(cudaMemcpy(ones_.data(), ones.data(), 4ull * maxBatch, cudaMemcpyHostToDevice));
  AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), kControlBytes, cudaHostAllocDefault));
}

void AfdAttentionSide::sendControl(const StageRows& rows, uint32_t flags) {
  ControlPayload p;
  p.reset(1);
  p.step = stepNumber_++;
  p.flags = flags;
  p.numStages = rows.second > 0 ? 2 : 1;
  p.numPeers = 1;
  p.setTokens(0, 0, static_cast<uint32_t>(rows.first));
  p.setTokens(0, 1, static_cast<uint32_t>(rows.second));
  afd::comm::encodeControlPayload(p, &controlHost_);
  // Fixed size on the wire (NCCL needs the count on both sides); the payload says its own length.
  controlHost_.resize(afd::comm::maxControlPayloadBytes(1), 0);
  // The previous step's control send has completed (its step was waited for).
  std::memcpy(pinned_, controlHost_.data(), controlHost_.size());
  void* staging = wire_.inbox(kControlChannel, 1);  // our own slot 1 is never received into: use it as the source
  AFD_CUDA_CHECK(cudaMemcpyAsync(staging, pinned_, controlHost_.size(), cudaMemcpyHostToDevice, comm_[0]));
  wire_.send(kControlChannel, 0, staging, controlHost_.size(), comm_[0]);
}

void AfdAttentionSide::enqueueStep(const StageRows& rows, bool timing) {
  const ModelConfig& c = dec_.config();
  const int stages = rows.second > 0 ? 2 : 1;
  const int begin[2] = {0, rows.first};
  const int count[2] = {rows.first, rows.second};
  const int total = rows.first + rows.second;
  const size_t H = static_cast<size_t>(hidden_);
  auto combine = [&](int layer, int s) {
    MoeCombineArgs cb;
    cb.expertOut = static_cast<const float*>(wire_.inbox(s, layer & 1));
    cb.pairPosition = identityPos_.as<int32_t>();
    cb.topkWeights = ones_.as<float>();
    cb.out = dec_.residualRows(begin[s]);
    cb.accumulate = true;
    cb.normWeight = dec_.nextNormWeight(layer);
    cb.normOut = dec_.xNormRows(begin[s]);
    cb.rows = count[s];
    cb.hidden = hidden_;
    cb.topK = 1;
    cb.eps = static_cast<float>(c.rmsNormEps);
    moeCombine(cb, compute_);
  };
  dec_.enqueueEmbed(total);
  for (int l = 0; l < c.numLayers; ++l) {
    for (int s = 0; s < stages; ++s) {
      if (l > 0) {
        link(comm_[s], compute_);
        combine(l - 1, s);
      }
      dec_.enqueueAttentionHalf(l, begin[s], count[s], total);  // choices of the whole step: exact stages
      const void* message = dec_.xNormRows(begin[s]);
      size_t messageBytes = count[s] * H * 2;
      if (gateOnAttention_) {
        // message: xNorm bf16 [rows, H] then router logits f32 [rows, E].
        char* staging = gateStaging_.as<char>() + gateStageBytes_ * s;
        AFD_CUDA_CHECK(cudaMemcpyAsync(staging, message, messageBytes, cudaMemcpyDeviceToDevice, compute_));
        dec_.enqueueRouter(l, message, count[s], reinterpret_cast<float*>(staging + messageBytes), total);
        message = staging;
        messageBytes += static_cast<size_t>(count[s]) * c.numExperts * 4;
      }
      link(compute_, comm_[s]);
      if (timing && s == 0) AFD_CUDA_CHECK(cudaEventRecord(timing_[2 * l], comm_[s]));
      wire_.send(s, l & 1, message, messageBytes, comm_[s]);
      wire_.recv(s, l & 1, count[s] * H * 4, comm_[s]);
      if (timing && s == 0) AFD_CUDA_CHECK(cudaEventRecord(timing_[2 * l + 1], comm_[s]));
    }
  }
  for (int s = 0; s < stages; ++s) {
    link(comm_[s], compute_);
    combine(c.numLayers - 1, s);
  }
  dec_.enqueueHead(total);
}

std::vector<int32_t> AfdAttentionSide::step(const DecodeInput& input, bool dbo, bool graph, bool sampleWire) {
  const int bucket = dec_.paddedBatch(input.rows);
  const int padded = bucket > 0 ? bucket : input.rows;
  AFD_CHECK(padded <= maxBatch_, "AFD step: " << input.rows << " rows exceed maxBatch " << maxBatch_);
  StageRows rows{padded, 0};
  if (dbo && padded >= 2) rows = {padded - padded / 2, padded / 2};
  const bool useGraph = graph && bucket > 0;
  const bool capture = useGraph && graphs_.find(rows) == graphs_.end();
  const bool timing = sampleWire && !useGraph;
  uint32_t flags = 0;
  if (useGraph) flags |= capture ? afd::comm::kFlagGraphCapture : afd::comm::kFlagGraphReplay;
  dec_.upload(input, padded);
  sendControl(rows, flags);
  // The step's first wire op must follow the control payload on the same communicator.
  link(comm_[0], compute_);
  runGraphOrEager(rows, useGraph, false, [&] { enqueueStep(rows, timing); });
  AFD_CUDA_CHECK(cudaEventRecord(done_, compute_));
  wire_.wait(done_, Deadline::afterMs(stepDeadlineMs_));
  if (timing) readTiming(dec_.config().numLayers);
  return dec_.downloadTokens(input.rows);
}

void AfdAttentionSide::shutdown() {
  sendControl({1, 0}, afd::comm::kFlagShutdown);
  AFD_CUDA_CHECK(cudaEventRecord(done_, comm_[0]));
  wire_.wait(done_, Deadline::afterMs(stepDeadlineMs_));
}

// ---------------------------------------------------------------- FFN side

AfdFfnSide::AfdFfnSide(MoeDecoder& decoder, cudaStream_t compute, int maxBatch, GpuWire& wire, int stepDeadlineMs,
                       bool gateOnAttention)
    : AfdSplitBase(decoder, compute, maxBatch, wire, stepDeadlineMs),
      gateOnAttention_(gateOnAttention),
      out_("AFD FFN outputs", 2ull * maxBatch * decoder.config().hiddenSize * 4),
      stageOutBytes_(static_cast<size_t>(maxBatch) * decoder.config().hiddenSize * 4) {
  AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), kControlBytes, cudaHostAllocDefault));
}

void AfdFfnSide::enqueueLoop(const StageRows& rows, bool timing) {
  const ModelConfig& c = dec_.config();
  const int stages = rows.second > 0 ? 2 : 1;
  const int count[2] = {rows.first, rows.second};
  const int total = rows.first + rows.second;
  const size_t H = static_cast<size_t>(hidden_);
  // The capture starts on the compute stream; the comm streams join it here.
  for (int s = 0; s < stages; ++s) link(compute_, comm_[s]);
  for (int l = 0; l < c.numLayers; ++l) {
    for (int s = 0; s < stages; ++s) {
      const size_t hiddenBytes = count[s] * H * 2;
      const size_t logitBytes = gateOnAttention_ ? static_cast<size_t>(count[s]) * c.numExperts * 4 : 0;
      wire_.recv(s, l & 1, hiddenBytes + logitBytes, comm_[s]);
      link(comm_[s], compute_);
      if (timing && s == 0) AFD_CUDA_CHECK(cudaEventRecord(timing_[2 * l], compute_));
      float* out = reinterpret_cast<float*>(out_.as<char>() + stageOutBytes_ * s);
      char* in = static_cast<char*>(wire_.inbox(s, l & 1));
      const float* logits = gateOnAttention_ ? reinterpret_cast<const float*>(in + hiddenBytes) : nullptr;
      dec_.enqueueFfnHalf(l, in, count[s], out, false, nullptr, logits, total);
      if (timing && s == 0) AFD_CUDA_CHECK(cudaEventRecord(timing_[2 * l + 1], compute_));
      link(compute_, comm_[s]);
      wire_.send(s, l & 1, out, count[s] * H * 4, comm_[s]);
    }
  }
  for (int s = 0; s < stages; ++s) link(comm_[s], compute_);
}

bool AfdFfnSide::serveStep(afd::comm::StopFlag stop) {
  const size_t bytes = afd::comm::maxControlPayloadBytes(1);
  wire_.recv(kControlChannel, 0, bytes, comm_[0]);
  AFD_CUDA_CHECK(cudaMemcpyAsync(pinned_, wire_.inbox(kControlChannel, 0), bytes, cudaMemcpyDeviceToHost, comm_[0]));
  AFD_CUDA_CHECK(cudaEventRecord(done_, comm_[0]));
  wire_.wait(done_, Deadline::never(), stop);
  ControlPayload p;
  uint32_t encoded = 0;  // u32 totalBytes at offset 12 (see comm/control-payload.cc)
  std::memcpy(&encoded, pinned_ + 12, 4);
  const std::string err = encoded > bytes ? "length field " + std::to_string(encoded) + " exceeds " + std::to_string(bytes)
                                          : afd::comm::decodeControlPayload(pinned_, encoded, &p);
  AFD_CHECK(err.empty(), "FFN side: bad control payload from " << wire_.peer() << ": " << err);
  if (p.flags & afd::comm::kFlagShutdown) return false;
  const StageRows rows{static_cast<int>(p.wireRows(0, 0)), p.numStages > 1 ? static_cast<int>(p.wireRows(0, 1)) : 0};
  AFD_CHECK(rows.first + rows.second <= maxBatch_,
            "FFN side: step of " << rows.first + rows.second << " rows exceeds maxBatch " << maxBatch_);
  const bool graph = (p.flags & (afd::comm::kFlagGraphCapture | afd::comm::kFlagGraphReplay)) != 0;
  const bool timing = !graph && p.step % 8 == 0;
  runGraphOrEager(rows, graph, (p.flags & afd::comm::kFlagGraphCapture) != 0, [&] { enqueueLoop(rows, timing); });
  AFD_CUDA_CHECK(cudaEventRecord(done_, compute_));
  wire_.wait(done_, Deadline::afterMs(stepDeadlineMs_), stop);
  if (timing) readTiming(dec_.config().numLayers);
  return true;
}

}  // namespace afd::cuda
