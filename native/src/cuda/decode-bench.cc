#include "cuda/decode-bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "cuda/cuda-backend.h"
#include "cuda/bench-stats.h"
#include "cuda/cuda-check.h"
#include "cuda/moe-decoder.h"
#include "cuda/moe-decoder-inputs.h"

namespace afd::cuda {
namespace {

using Clock = std::chrono::steady_clock;

double measureCopyBandwidth(cudaStream_t stream) {
  const size_t bytes = 1ull << 30;
  DeviceBuffer src("bandwidth probe source", bytes);
  DeviceBuffer dst("bandwidth probe destination", bytes);
  AFD_CUDA_CHECK(cudaMemsetAsync(src.data(), 0x5a, bytes, stream));
  cudaEvent_t a, b;
  AFD_CUDA_CHECK(cudaEventCreate(&a));
  AFD_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    AFD_CUDA_CHECK(cudaEventRecord(a, stream));
    AFD_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream));
    AFD_CUDA_CHECK(cudaEventRecord(b, stream));
    AFD_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    AFD_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    if (i >= 2) ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 2.0 * bytes / (percentile(ms, 0.5) * 1e-3) / 1e9;
}

// Bytes one decode step must move: every weight it reads once, plus the KV it attends to.
double stepBytes(const ModelConfig& c, int batch, int context, const std::vector<int32_t>& activeExperts) {
  const double H = c.hiddenSize, D = c.headDim, nH = c.numHeads, nKv = c.numKvHeads, E = c.numExperts;
  const double I = c.moeIntermediateSize, V = c.vocabSize;
  double bytes = 0;
  for (int l = 0; l < c.numLayers; ++l) {
    bytes += ((nH + 2 * nKv) * D * H + H * nH * D + 2 * H + 2 * D + E * H) * 2;  // attention, norms, router
    bytes += activeExperts[l] * 3.0 * I * H * 2;                                   // routed experts
  }
  bytes += V * H * 2 + H * 2 + batch * H * 2;                           // LM head, final norm, embedding rows
  bytes += static_cast<double>(batch) * (context + 1) * c.numLayers * 2 * nKv * D * 2;  // K and V read
  return bytes;
}

}  // namespace

DecodeBenchResult runDecodeBench(const ModelConfig& config, const DecodeBenchOptions& options) {
  if (options.batches.empty()) throw std::invalid_argument("decode bench: no batch sizes given");
  const auto setupStart = Clock::now();
  CudaBackend backend(options.deviceIndex);
  DecodeBenchResult result;
  cudaDeviceProp prop{};
  AFD_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.deviceIndex));
  result.deviceName = prop.name;
  result.multiProcessors = prop.multiProcessorCount;
  result.copyBandwidthGBs = measureCopyBandwidth(backend.stream());

  DecoderOptions dopt;
  dopt.maxBatch = *std::max_element(options.batches.begin(), options.batches.end());
  dopt.maxContext = options.context + 16;
  dopt.kvMemoryFraction = options.kvMemoryFraction;
  MoeDecoder decoder(backend, config, dopt);
  decoder.initSynthetic(options.seed);
  decoder.fillKvRandom(options.seed + 7);
  result.weightBytes = decoder.weightBytes();
  result.kvBytes = decoder.kvBytes();
  result.setupSeconds = std::chrono::duration<double>(Clock::now() - setupStart).count();

  cudaEvent_t evA, evB;
  AFD_CUDA_CHECK(cudaEventCreate(&evA));
  AFD_CUDA_CHECK(cudaEventCreate(&evB));
  const int blocksPerSeq = decoder.maxBlocksPerSeq();
  for (int batch : options.batches) {
    // Sequence s owns blocks [s * blocksPerSeq, (s + 1) * blocksPerSeq); it decodes the
    // token at position `context` (positions 0..context-1 hold random KV).
    SyntheticDecodeBatch batchInputs(batch, blocksPerSeq, dopt.blockSize, config.vocabSize);
    batchInputs.at(options.context);
    const DecodeInput& in = batchInputs.view;
    std::vector<int32_t> eagerTokens;
    for (bool graph : {false, true}) {
      const int padded = graph ? decoder.paddedBatch(batch) : batch;
      if (padded != batch) throw std::invalid_argument("decode bench: batch " + std::to_string(batch) + " is not a graph bucket");
      std::vector<double> hostMs, deviceMs;
      std::vector<int32_t> tokens(batch);
      for (int i = 0; i < options.warmupSteps + options.timedSteps; ++i) {
        const auto t0 = Clock::now();
        decoder.upload(in, padded);
        AFD_CUDA_CHECK(cudaEventRecord(evA, backend.stream()));
        decoder.launch(padded, graph);
        AFD_CUDA_CHECK(cudaEventRecord(evB, backend.stream()));
        tokens = decoder.downloadTokens(batch);
        const auto t1 = Clock::now();
        float dms = 0;
        AFD_CUDA_CHECK(cudaEventElapsedTime(&dms, evA, evB));
        if (i >= options.warmupSteps) {
          hostMs.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          deviceMs.push_back(dms);
        }
      }
      DecodeBenchRow row;
      row.batch = batch;
      row.graph = graph;
      row.deviceMsPerStep = percentile(deviceMs, 0.5);
      row.msPerStep = percentile(hostMs, 0.5);
      row.msPerStepP10 = percentile(hostMs, 0.1);
      row.msPerStepP90 = percentile(hostMs, 0.9);
      row.tokensPerSecond = batch / (row.msPerStep * 1e-3);
      const std::vector<int32_t> active = decoder.activeExpertsPerLayer();
      double activeSum = 0;
      for (int32_t a : active) activeSum += a;
      row.activeExpertsPerLayer = activeSum / active.size();
      row.bytesPerStep = stepBytes(config, batch, options.context, active);
      row.floorMsAtReference = row.bytesPerStep / (options.referenceBandwidthGBs * 1e9) * 1e3;
      row.floorMsAtMeasured = row.bytesPerStep / (result.copyBandwidthGBs * 1e9) * 1e3;
      row.achievedGBs = row.bytesPerStep / (row.msPerStep * 1e-3) / 1e9;
      row.ratioToFloor = row.floorMsAtReference / row.msPerStep;
      for (int32_t t : tokens)
        if (t < 0 || t >= config.vocabSize) throw std::runtime_error("decode bench: sampled token out of range");
      if (!graph) eagerTokens = tokens;
      row.tokensMatchEager = graph ? tokens == eagerTokens : true;
      result.rows.push_back(row);
    }
    // Kernels per step: nodes of the captured step (the eager step launches the same kernels).
    const uint64_t nodes = decoder.graphNodes(batch);
    result.rows[result.rows.size() - 1].kernelsPerStep = nodes;
    result.rows[result.rows.size() - 2].kernelsPerStep = nodes;
  }
  cudaEventDestroy(evA);
  cudaEventDestroy(evB);
  result.graphCaptures = decoder.counters().graphCaptures;
  result.graphHits = decoder.counters().graphHits;
  result.graphMisses = decoder.counters().graphMisses;
  return result;
}

}  // namespace afd::cuda
