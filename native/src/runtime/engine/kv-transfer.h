// Moving a sequence's KV-cache blocks and recurrent-state slot between engines of one model
// (prefill / decode disaggregation): the byte layout both ends agree on. The Engine methods
// (engine.h: exportKvBlocks / importKvBlocks / exportStateSlot / importStateSlot) take the
// engine mutex and call these.
//
// KV blocks: for each layer with a paged cache (pagedKvLayers; gdn layers have none), in
// layer order; for each tensor of the layer (K then V; latent MLA layouts: K only); for each
// block id in the order given: the block's raw rows, [blockSize, numKvHeads, headDim]
// (latent: [blockSize, headDim]) in the cache dtype. Total: numKvLayers x tensorsPerLayer x
// n x blockSize x rowBytes (EngineInfo kvNumLayers, kvTensorsPerLayer, kvRowBytes).
//
// State slot: for each gdn layer, in layer order: its conv state [C, W - 1] then its
// delta-rule state [Hv, Dk, Dv] of the slot, both f32. Total: EngineInfo stateBytesPerSlot.
#pragma once
#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "runtime/engine/kv-cache.h"
#include "runtime/engine/recurrent-state.h"

namespace afd {

// The tensors a transfer walks, in layout order: K then V of each cached layer; conv then
// delta of each gdn layer.
std::vector<Tensor*> kvTransferTensors(PagedKvCache& kv);
std::vector<Tensor*> stateTransferTensors(RecurrentState& state);

// Refuses (naming the id and its index) block ids outside [0, usableBlocks) and ids listed
// twice; `what` names the call in the message.
void checkTransferBlockIds(const char* what, const std::vector<int32_t>& blockIds, int usableBlocks);

// Bytes of `blockIds` (checked by the caller) in the layout above.
std::vector<uint8_t> readKvBlocks(Backend& backend, PagedKvCache& kv, const std::vector<int32_t>& blockIds);
// Writes `blockIds` from `data` (exactly the layout's bytes; refused otherwise).
void writeKvBlocks(Backend& backend, PagedKvCache& kv, const std::vector<int32_t>& blockIds, const uint8_t* data,
                   size_t bytes);

// The state of `slot` (in [0, state.numSlots()); refused otherwise) in the layout above.
std::vector<uint8_t> readStateSlot(Backend& backend, RecurrentState& state, int slot);
// Writes the state of `slot` from `data` (exactly stateBytesPerSlot bytes; refused otherwise).
void writeStateSlot(Backend& backend, RecurrentState& state, int slot, const uint8_t* data, size_t bytes);

}  // namespace afd
