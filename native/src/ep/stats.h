// Counters of one FFN rank's expert-parallel exchange, read by JS at ~10 Hz (FfnServer
// expertStats(), merged into RankStats.experts). Cumulative since the rank started.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

namespace afd {

struct EpStats {
  EpStats(int numLayers, int numExperts)
      : numLayers(numLayers),
        numExperts(numExperts),
        tokensPerExpert(new std::atomic<uint64_t>[static_cast<size_t>(numLayers) * numExperts]()),
        dispatchSentBytes(new std::atomic<uint64_t>[numLayers]()),
        dispatchReceivedBytes(new std::atomic<uint64_t>[numLayers]()),
        combineSentBytes(new std::atomic<uint64_t>[numLayers]()),
        combineReceivedBytes(new std::atomic<uint64_t>[numLayers]()) {}

  const int numLayers;
  const int numExperts;
  // [numLayers * numExperts] token-expert pairs this rank's router sent to expert e of layer L.
  std::unique_ptr<std::atomic<uint64_t>[]> tokensPerExpert;
  // [numLayers] bytes of dispatch (pairs to their owners) and combine (outputs back to
  // their sources) this rank sent to / received from the other FFN ranks.
  std::unique_ptr<std::atomic<uint64_t>[]> dispatchSentBytes, dispatchReceivedBytes;
  std::unique_ptr<std::atomic<uint64_t>[]> combineSentBytes, combineReceivedBytes;
  std::atomic<uint64_t> exchangeUs{0};  // time inside the two all-to-alls (wire and waiting for peers)
  std::atomic<uint64_t> groupSteps{0};  // group steps joined

  std::atomic<uint64_t>& tokens(int layer, int expert) {
    return tokensPerExpert[static_cast<size_t>(layer) * numExperts + expert];
  }
};

}  // namespace afd
