// The decode benchmark of the fused CUDA path on a synthetic (random-weight) model of a
// given shape: per batch size, ms per step with and without the CUDA graph, tokens/s,
// the bytes a step must touch (weights of the experts actually routed to, attention,
// LM head, KV read) against the measured copy bandwidth, and kernels per step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model-config.h"

namespace afd::cuda {

struct DecodeBenchOptions {
  std::vector<int> batches{1, 8, 64, 256};
  int context = 1024;       // cached positions before the decoded token
  int warmupSteps = 5;
  int timedSteps = 30;
  uint64_t seed = 1;
  int deviceIndex = 0;
  double kvMemoryFraction = 0.9;
  double referenceBandwidthGBs = 4300.0;  // PERFORMANCE.md's floor bandwidth
};

struct DecodeBenchRow {
  int batch = 0;
  bool graph = false;
  double msPerStep = 0;     // median over timed steps, host wall clock incl. token download
  double msPerStepP10 = 0;
  double msPerStepP90 = 0;
  double deviceMsPerStep = 0;  // median, CUDA events around the device work
  double tokensPerSecond = 0;
  double bytesPerStep = 0;     // weights touched + KV read
  double activeExpertsPerLayer = 0;
  double floorMsAtReference = 0;   // bytes / reference bandwidth
  double floorMsAtMeasured = 0;    // bytes / measured copy bandwidth
  double achievedGBs = 0;          // bytes / msPerStep
  double ratioToFloor = 0;         // floorMsAtReference / msPerStep
  uint64_t kernelsPerStep = 0;     // nodes of the captured step
  bool tokensMatchEager = true;    // graph replay sampled the same tokens as the eager step
};

struct DecodeBenchResult {
  std::string deviceName;
  int multiProcessors = 0;
  double copyBandwidthGBs = 0;  // device-to-device copy, bytes read + written
  uint64_t weightBytes = 0;
  uint64_t kvBytes = 0;
  double setupSeconds = 0;
  uint64_t graphCaptures = 0, graphHits = 0, graphMisses = 0;
  std::vector<DecodeBenchRow> rows;
};

DecodeBenchResult runDecodeBench(const ModelConfig& config, const DecodeBenchOptions& options);

}  // namespace afd::cuda
