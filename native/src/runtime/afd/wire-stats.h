// Sampled wire times into the engine's counters, with how each direction was measured.
#pragma once
#include "comm/wire-time.h"
#include "runtime/engine/stats.h"

namespace afd {

// Stores t for direction A->F (aToF) or F->A: at the transfer it timed when the plane
// says which (TCP tags its samples), else at (layer, stage), the transfer just run.
// Nothing is stored for an unavailable sample.
inline void recordWire(EngineStats& stats, bool aToF, const comm::WireTime& t, int layer, int stage) {
  if (t.basis == comm::WireBasis::kUnavailable) return;
  const int64_t L = t.tagged ? t.layer : layer, S = t.tagged ? t.stage : stage;
  if (L < 0 || L >= stats.numLayers || S < 0 || S >= stats.numStages) return;
  LayerStageCounters& c = stats.at(static_cast<int>(L), static_cast<int>(S));
  (aToF ? c.wireTimeUsAtoF : c.wireTimeUsFtoA).store(t.us, std::memory_order_relaxed);
  (aToF ? stats.wireBasisAtoF : stats.wireBasisFtoA).store(static_cast<uint8_t>(t.basis), std::memory_order_relaxed);
}

}  // namespace afd
