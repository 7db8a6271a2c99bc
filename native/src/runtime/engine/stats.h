// Runtime counters read by JS at ~10 Hz (never a per-layer callback). Writers are the
// engine / connector threads; readers take a snapshot. Maps to RankStats
// (shared/src/protocol/metrics.ts). Times in microseconds, sizes in bytes.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace afd {

// FFN daemon loop state (written by the FFN server of the runtime).
enum class FfnLoopState : uint8_t { Idle = 0, WaitingControl, Receiving, Computing, Sending };
const char* ffnLoopStateName(FfnLoopState s);

// Per (layer, stage) connector traffic; filled by the connector (comm/), zero colocated.
struct LayerStageCounters {
  std::atomic<uint64_t> bytesAtoF{0};
  std::atomic<uint64_t> bytesFtoA{0};
  std::atomic<uint64_t> wireTimeUsAtoF{0};  // most recent sampled transfer
  std::atomic<uint64_t> wireTimeUsFtoA{0};  // most recent sampled transfer
};

struct EngineStats {
  explicit EngineStats(int numLayers, int numStages = 2)
      : numLayers(numLayers), numStages(numStages), layerStage(new LayerStageCounters[numLayers * numStages]) {}

  const int numLayers;
  const int numStages;
  std::atomic<uint64_t> steps{0};
  std::atomic<uint64_t> lastStepUs{0};
  std::atomic<uint64_t> totalStepUs{0};
  std::atomic<uint64_t> prefillTokens{0};   // tokens of sequences that sampled nothing or had > 1 token
  std::atomic<uint64_t> decodeTokens{0};    // single-token decode rows
  std::atomic<uint64_t> sampledTokens{0};
  std::atomic<uint64_t> ffnComputeUs{0};    // time in the FFN half (local executor / FFN role)
  std::atomic<uint64_t> ffnWaitUs{0};       // attention side blocked in collect()
  std::atomic<uint64_t> graphHits{0}, graphMisses{0}, graphCaptures{0};  // CUDA graph cache
  std::atomic<uint64_t> graphNodes{0};      // kernel / memset / copy nodes of the last captured step graph
  std::atomic<uint64_t> stepsServed{0};     // FFN role: steps run for attention peers
  std::atomic<uint8_t> ffnLoopState{0};     // FfnLoopState
  std::atomic<int32_t> ffnLoopLayer{-1};
  std::atomic<int32_t> ffnLoopStage{-1};
  std::atomic<uint64_t> ffnLoopSinceUs{0};  // steadyNowUs() when the state was entered
  // How the wire times of each direction were measured: a comm::WireBasis (0 = none yet).
  std::atomic<uint8_t> wireBasisAtoF{0}, wireBasisFtoA{0};
  std::atomic<uint64_t> kvBlocksUsed{0};    // distinct blocks referenced by the last step
  uint64_t kvBlocksTotal = 0;
  std::unique_ptr<LayerStageCounters[]> layerStage;  // [numLayers * numStages]

  LayerStageCounters& at(int layer, int stage) { return layerStage[layer * numStages + stage]; }

  // Sets the FFN loop state (layer / stage -1 when not applicable).
  void setFfnLoop(FfnLoopState s, int layer = -1, int stage = -1);
};

// Monotonic clock in microseconds (the time base of ffnLoopSinceUs).
uint64_t steadyNowUs();

}  // namespace afd
