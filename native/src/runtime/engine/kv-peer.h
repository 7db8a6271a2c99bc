// Prefill / decode disaggregation by peer memory, for two engines of one model on one host:
// the prefill engine keeps its KV cache (and recurrent state) in a SharedRegion
// (EngineOptions::kvShareable) and hands out a KvShareDescriptor; the decode engine maps it
// (openKvPeer) and copies the blocks (pullKvBlocks) and the state slot (pullStateSlot) of a
// prefilled prompt into its own, device to device. Only block ids travel between the
// processes; the layouts must be the same (the transfer layout of kv-transfer.h, which is
// also the regions' order: tensor i of the KV region starts at i x regionBlocks x blockBytes).
//
// The prefill side keeps the blocks it handed out unused until the peer says it copied
// them, and calls kvFence first so the peer reads the KV of every step that resolved.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "runtime/engine/kv-cache.h"
#include "runtime/engine/recurrent-state.h"

namespace afd {

struct KvShareDescriptor {
  std::string kind;            // Backend::sharedMemoryKind of the owner: "cpu" | "cuda"
  std::vector<uint8_t> kv;     // the KV region's handle
  uint64_t kvBytes = 0;
  std::vector<uint8_t> state;  // the recurrent state's region handle; empty without gdn layers
  uint64_t stateBytes = 0;
  int numKvBlocks = 0;         // usable blocks (ids a pull may name)
  int numStateSlots = 0;       // usable slots
};

// The descriptor of an engine's shared KV cache and state (the caches must be shared).
KvShareDescriptor describeShared(const Backend& backend, const PagedKvCache& kv, const RecurrentState* state,
                                 int numKvBlocks, int numStateSlots);

// A peer's regions mapped into this process, with the geometry the pulls need.
class KvPeer {
 public:
  // Maps d's regions and checks them against this engine's layout (kv, state); throws
  // naming what differs, or the system's reason a region cannot be mapped.
  KvPeer(Backend& backend, PagedKvCache& kv, RecurrentState* state, const KvShareDescriptor& d);

  // Blocks srcIds[i] of the peer into this engine's dstIds[i] (both checked), then waits.
  void pullBlocks(Backend& backend, PagedKvCache& kv, const std::vector<int32_t>& srcIds,
                  const std::vector<int32_t>& dstIds, int numKvBlocks) const;
  // The peer's state slot into this engine's, then waits.
  void pullState(Backend& backend, RecurrentState& state, int srcSlot, int dstSlot) const;

 private:
  std::unique_ptr<SharedRegion> kv_, state_;
  int numKvBlocks_ = 0, regionBlocks_ = 0;
  int numStateSlots_ = 0, stateRows_ = 0;
};

}  // namespace afd
