#include "runtime/engine/kv-transfer.h"

#include <unordered_map>

#include "runtime/engine/engine.h"

namespace afd {
namespace {

size_t rowBytesOf(const Tensor& t) { return static_cast<size_t>(t.rowElems()) * dtypeBytes(t.dtype); }

// Calls copy(deviceOffset, hostOffset, bytes) for every run of consecutive block ids of each
// tensor, so a sequence's contiguous blocks move in one copy.
template <typename Copy>
void forEachBlockRun(const std::vector<Tensor*>& tensors, const std::vector<int32_t>& ids, Copy copy) {
  size_t host = 0;
  for (Tensor* t : tensors) {
    const size_t blockBytes = rowBytesOf(*t);
    for (size_t i = 0; i < ids.size();) {
      size_t j = i + 1;
      while (j < ids.size() && ids[j] == ids[j - 1] + 1) ++j;
      const size_t bytes = (j - i) * blockBytes;
      copy(static_cast<uint8_t*>(t->data) + static_cast<size_t>(ids[i]) * blockBytes, host, bytes);
      host += bytes;
      i = j;
    }
  }
}

size_t kvTransferBytes(const std::vector<Tensor*>& tensors, size_t numBlocks) {
  size_t total = 0;
  for (const Tensor* t : tensors) total += rowBytesOf(*t) * numBlocks;
  return total;
}

void checkSlot(const char* what, const RecurrentState& state, int slot) {
  AFD_CHECK(slot >= 0 && slot < state.numSlots(),
            what << ": slot " << slot << " is outside [0, " << state.numSlots() << ") (the engine's numStateSlots)");
}

}  // namespace

std::vector<Tensor*> kvTransferTensors(PagedKvCache& kv) {
  std::vector<Tensor*> out;
  for (int L = 0; L < kv.numLayers(); ++L) {
    if (kv.k(L).empty()) continue;
    out.push_back(&kv.k(L));
    if (!kv.v(L).empty()) out.push_back(&kv.v(L));
  }
  return out;
}

std::vector<Tensor*> stateTransferTensors(RecurrentState& state) {
  std::vector<Tensor*> out;
  for (int L = 0; L < state.numLayers(); ++L) {
    if (state.conv(L).empty()) continue;
    out.push_back(&state.conv(L));
    out.push_back(&state.delta(L));
  }
  return out;
}

void checkTransferBlockIds(const char* what, const std::vector<int32_t>& blockIds, int usableBlocks) {
  std::unordered_map<int32_t, size_t> seen;
  for (size_t i = 0; i < blockIds.size(); ++i) {
    const int32_t id = blockIds[i];
    AFD_CHECK(id >= 0 && id < usableBlocks,
              what << ": blockIds[" << i << "] = " << id << " is outside [0, " << usableBlocks << ") (the engine's numKvBlocks)");
    auto [it, fresh] = seen.emplace(id, i);
    AFD_CHECK(fresh, what << ": blockIds lists block " << id << " twice (at " << it->second << " and " << i
                          << "); each block moves once per call");
  }
}

// Both directions go through one staging buffer on the device: the block runs are gathered
// into it (or scattered from it) by device copies queued without a wait, and the host side
// is one copy. A copy per run with its own wait cost ~1 ms each under MPS on an H100 (a
// 4,096-token prompt of Qwen3-8B is ~4,600 runs): 25 MB/s; one wait per call is the floor.
std::vector<uint8_t> readKvBlocks(Backend& backend, PagedKvCache& kv, const std::vector<int32_t>& blockIds) {
  const std::vector<Tensor*> tensors = kvTransferTensors(kv);
  std::vector<uint8_t> out(kvTransferBytes(tensors, blockIds.size()));
  if (out.empty()) return out;
  Buffer staging(&backend, out.size());
  uint8_t* base = static_cast<uint8_t*>(staging.data());
  forEachBlockRun(tensors, blockIds, [&](void* dev, size_t host, size_t bytes) { backend.copyDevice(base + host, dev, bytes); });
  backend.copyToHost(out.data(), base, out.size());  // after the gathers (same stream), then waits
  return out;
}

void writeKvBlocks(Backend& backend, PagedKvCache& kv, const std::vector<int32_t>& blockIds, const uint8_t* data,
                   size_t bytes) {
  const std::vector<Tensor*> tensors = kvTransferTensors(kv);
  const size_t expected = kvTransferBytes(tensors, blockIds.size());
  AFD_CHECK(bytes == expected, "importKvBlocks: data has " << bytes << " bytes, expected " << expected << " ("
                                                          << blockIds.size() << " blocks x " << tensors.size()
                                                          << " cache tensors x " << (tensors.empty() ? 0 : rowBytesOf(*tensors[0]))
                                                          << " bytes per block and tensor)");
  if (bytes == 0) return;
  Buffer staging(&backend, bytes);
  uint8_t* base = static_cast<uint8_t*>(staging.data());
  backend.copyToDevice(base, data, bytes);  // waits: the host data may go once this returns
  forEachBlockRun(tensors, blockIds, [&](void* dev, size_t host, size_t n) { backend.copyDevice(dev, base + host, n); });
  backend.synchronize();  // the blocks hold the KV before the next step reads them
}

std::vector<uint8_t> readStateSlot(Backend& backend, RecurrentState& state, int slot) {
  checkSlot("exportStateSlot", state, slot);
  const std::vector<Tensor*> tensors = stateTransferTensors(state);
  size_t total = 0;
  for (const Tensor* t : tensors) total += rowBytesOf(*t);
  std::vector<uint8_t> out(total);
  size_t host = 0;
  for (Tensor* t : tensors) {
    const size_t row = rowBytesOf(*t);
    backend.copyToHost(out.data() + host, static_cast<uint8_t*>(t->data) + static_cast<size_t>(slot) * row, row);
    host += row;
  }
  return out;
}

void writeStateSlot(Backend& backend, RecurrentState& state, int slot, const uint8_t* data, size_t bytes) {
  checkSlot("importStateSlot", state, slot);
  const std::vector<Tensor*> tensors = stateTransferTensors(state);
  size_t expected = 0;
  for (const Tensor* t : tensors) expected += rowBytesOf(*t);
  AFD_CHECK(bytes == expected, "importStateSlot: data has " << bytes << " bytes, expected " << expected
                                                           << " (the engine's stateBytesPerSlot)");
  size_t host = 0;
  for (Tensor* t : tensors) {
    const size_t row = rowBytesOf(*t);
    backend.copyToDevice(static_cast<uint8_t*>(t->data) + static_cast<size_t>(slot) * row, data + host, row);
    host += row;
  }
}

// ---- Engine's transfer methods (engine.h) ------------------------------------------

void Engine::requireKvCache(const char* what) const {
  AFD_CHECK(kv_ != nullptr, what << ": an engine with role " << info_.role
                                 << " has no KV cache; export / import blocks on an attention or colocated engine");
}

void Engine::requireStateSlots(const char* what) const {
  requireKvCache(what);
  AFD_CHECK(state_ != nullptr, what << ": the model (" << info_.arch
                                    << ") has no linear-attention (gdn) layer, so its engine keeps no recurrent-state slots");
}

std::vector<uint8_t> Engine::exportKvBlocks(const std::vector<int32_t>& blockIds) {
  std::lock_guard<std::mutex> lock(mu_);
  requireKvCache("exportKvBlocks");
  checkTransferBlockIds("exportKvBlocks", blockIds, info_.numKvBlocks);
  return readKvBlocks(*backend_, *kv_, blockIds);
}

void Engine::importKvBlocks(const std::vector<int32_t>& blockIds, const uint8_t* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  requireKvCache("importKvBlocks");
  checkTransferBlockIds("importKvBlocks", blockIds, info_.numKvBlocks);
  writeKvBlocks(*backend_, *kv_, blockIds, data, bytes);
}

std::vector<uint8_t> Engine::exportStateSlot(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  requireStateSlots("exportStateSlot");
  return readStateSlot(*backend_, *state_, slot);
}

void Engine::importStateSlot(int slot, const uint8_t* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  requireStateSlots("importStateSlot");
  writeStateSlot(*backend_, *state_, slot, data, bytes);
}

}  // namespace afd
