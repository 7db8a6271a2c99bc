// The AFD-on-GPUs benchmark, one process per role (attention on one GPU, FFN on
// another), joined through a TCP bootstrap (NCCL unique ids, CUDA IPC handles) and then
// the GPU wires only. The attention side drives; the FFN side follows the control
// payloads. Phases (attention side reports all, as JSON):
//   1. ping-pong per transport and size: host-launched round trip and the round trip
//      inside a captured graph (graphRounds per graph), microseconds;
//   2. colocated baseline: the fused decoder alone on the attention GPU (tokens, ms);
//   3. AFD decode per transport, batch, graph on/off, DBO on/off: ms per step, tokens
//      compared with the colocated run step by step, sampled per-layer round trip;
//   4. fault: the FFN process is killed (SIGKILL by pid); the next step must fail within
//      the step deadline (NCCL abort), and a colocated step must still run afterwards.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model-config.h"

namespace afd::cuda {

struct AfdGpuBenchOptions {
  std::string role = "attention";  // attention | ffn
  std::string host = "127.0.0.1";  // FFN bootstrap address
  int port = 29650;                // FFN bootstrap port
  int device = 0;
  std::vector<std::string> transports{"nccl", "peer"};
  std::vector<int> pingBytes{4096, 32768, 262144, 1048576};
  int pingIters = 200;
  int graphRounds = 48;
  int graphReplays = 20;
  std::vector<int> batches{1, 64, 256};
  int dboMinBatch = 64;  // DBO runs (two stages) at batches >= this
  int context = 1024;
  int warmupSteps = 3;
  int timedSteps = 20;
  uint64_t seed = 1;
  int stepDeadlineMs = 5000;
  int rendezvousTimeoutMs = 60000;
  bool faultTest = true;
  // Attention: the report so far is written here before the fault test (so a fault
  // test that hangs the device still leaves the measurements); empty = not written.
  std::string partialReportPath;
  std::map<std::string, std::string> ncclEnv;
};

// Runs one role; the attention side returns the JSON report, the FFN side a short JSON
// summary of what it served.
std::string runAfdGpuBench(const ModelConfig& config, const AfdGpuBenchOptions& options);

}  // namespace afd::cuda
