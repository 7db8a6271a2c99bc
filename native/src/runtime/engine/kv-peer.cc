#include "runtime/engine/kv-peer.h"

#include "runtime/engine/engine.h"
#include "runtime/engine/kv-transfer.h"

namespace afd {
namespace {

size_t rowBytesOf(const Tensor& t) { return static_cast<size_t>(t.rowElems()) * dtypeBytes(t.dtype); }

// Bytes of one block of one KV tensor (every tensor of a cache has the same rows).
size_t kvBlockBytes(PagedKvCache& kv) {
  const std::vector<Tensor*> tensors = kvTransferTensors(kv);
  return tensors.empty() ? 0 : rowBytesOf(*tensors[0]);
}

uint64_t stateSlotBytes(RecurrentState& state) {
  uint64_t total = 0;
  for (const Tensor* t : stateTransferTensors(state)) total += rowBytesOf(*t);
  return total;
}

// Calls copy(srcIndex, dstIndex, count) for each run of ids consecutive on both sides.
template <typename Copy>
void forEachPairedRun(const std::vector<int32_t>& src, const std::vector<int32_t>& dst, Copy copy) {
  for (size_t i = 0; i < src.size();) {
    size_t j = i + 1;
    while (j < src.size() && src[j] == src[j - 1] + 1 && dst[j] == dst[j - 1] + 1) ++j;
    copy(src[i], dst[i], j - i);
    i = j;
  }
}

}  // namespace

KvShareDescriptor describeShared(const Backend& backend, const PagedKvCache& kv, const RecurrentState* state,
                                 int numKvBlocks, int numStateSlots) {
  KvShareDescriptor d;
  d.kind = backend.sharedMemoryKind();
  d.kv = kv.sharedRegion()->handle();
  d.kvBytes = kv.sharedRegion()->bytes();
  if (state && state->sharedRegion()) {
    d.state = state->sharedRegion()->handle();
    d.stateBytes = state->sharedRegion()->bytes();
  }
  d.numKvBlocks = numKvBlocks;
  d.numStateSlots = numStateSlots;
  return d;
}

KvPeer::KvPeer(Backend& backend, PagedKvCache& kv, RecurrentState* state, const KvShareDescriptor& d)
    : numKvBlocks_(d.numKvBlocks), numStateSlots_(d.numStateSlots) {
  AFD_CHECK(d.kind == backend.sharedMemoryKind(), "openKvPeer: the peer's KV is " << (d.kind.empty() ? "not shared" : d.kind)
                                                  << " memory; this " << backend.name() << " engine maps "
                                                  << (backend.sharedMemoryKind().empty() ? "none" : backend.sharedMemoryKind()));
  const size_t numTensors = kvTransferTensors(kv).size();
  const size_t blockBytes = kvBlockBytes(kv);
  const uint64_t perBlock = numTensors * blockBytes;
  AFD_CHECK(perBlock > 0 && d.kvBytes % perBlock == 0 && d.numKvBlocks >= 1 && d.kvBytes / perBlock >= static_cast<uint64_t>(d.numKvBlocks),
            "openKvPeer: the peer's KV region of " << d.kvBytes << " bytes is not whole blocks of this engine's layout ("
                                                  << numTensors << " tensors x " << blockBytes << " bytes per block) for "
                                                  << d.numKvBlocks << " blocks; the layouts differ");
  regionBlocks_ = static_cast<int>(d.kvBytes / perBlock);
  const uint64_t slotBytes = state ? stateSlotBytes(*state) : 0;
  AFD_CHECK((slotBytes == 0) == d.state.empty(), "openKvPeer: " << (slotBytes ? "this engine keeps recurrent state but the peer shares none"
                                                                             : "the peer shares recurrent state but this engine keeps none"));
  if (slotBytes > 0) {
    AFD_CHECK(d.stateBytes % slotBytes == 0 && d.numStateSlots >= 1 && d.stateBytes / slotBytes >= static_cast<uint64_t>(d.numStateSlots),
              "openKvPeer: the peer's state region of " << d.stateBytes << " bytes is not whole slots of " << slotBytes
                                                        << " bytes for " << d.numStateSlots << " slots; the layouts differ");
    stateRows_ = static_cast<int>(d.stateBytes / slotBytes);
  }
  kv_ = backend.openShared(d.kv, d.kvBytes);
  if (slotBytes > 0) state_ = backend.openShared(d.state, d.stateBytes);
}

void KvPeer::pullBlocks(Backend& backend, PagedKvCache& kv, const std::vector<int32_t>& srcIds,
                        const std::vector<int32_t>& dstIds, int numKvBlocks) const {
  AFD_CHECK(srcIds.size() == dstIds.size(), "pullKvBlocks: " << srcIds.size() << " source ids but " << dstIds.size() << " destination ids");
  checkTransferBlockIds("pullKvBlocks (source)", srcIds, numKvBlocks_);
  checkTransferBlockIds("pullKvBlocks (destination)", dstIds, numKvBlocks);
  const std::vector<Tensor*> tensors = kvTransferTensors(kv);
  const size_t blockBytes = kvBlockBytes(kv);
  std::vector<Backend::DeviceCopy> copies;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint8_t* peer = static_cast<const uint8_t*>(kv_->data()) + i * static_cast<size_t>(regionBlocks_) * blockBytes;
    uint8_t* own = static_cast<uint8_t*>(tensors[i]->data);
    forEachPairedRun(srcIds, dstIds, [&](int32_t s, int32_t d, size_t n) {
      copies.push_back({own + static_cast<size_t>(d) * blockBytes, peer + static_cast<size_t>(s) * blockBytes, n * blockBytes});
    });
  }
  backend.copyDeviceBeside(copies);  // returns once the blocks hold the KV, before the peer may reuse its own
}

void KvPeer::pullState(Backend& backend, RecurrentState& state, int srcSlot, int dstSlot) const {
  AFD_CHECK(state_ != nullptr, "pullStateSlot: the peer shares no recurrent state");
  AFD_CHECK(srcSlot >= 0 && srcSlot < numStateSlots_, "pullStateSlot: the peer's slot " << srcSlot << " is outside [0, " << numStateSlots_ << ")");
  AFD_CHECK(dstSlot >= 0 && dstSlot < state.numSlots(), "pullStateSlot: slot " << dstSlot << " is outside [0, " << state.numSlots()
                                                                              << ") (the engine's numStateSlots)");
  size_t peerOffset = 0;
  std::vector<Backend::DeviceCopy> copies;
  for (Tensor* t : stateTransferTensors(state)) {
    const size_t row = rowBytesOf(*t);
    const uint8_t* peer = static_cast<const uint8_t*>(state_->data()) + peerOffset;
    copies.push_back({static_cast<uint8_t*>(t->data) + static_cast<size_t>(dstSlot) * row, peer + static_cast<size_t>(srcSlot) * row, row});
    peerOffset += static_cast<size_t>(stateRows_) * row;
  }
  backend.copyDeviceBeside(copies);
}

// ---- Engine's peer methods (engine.h) -------------------------------------------------

std::optional<KvShareDescriptor> Engine::kvShareDescriptor() const {
  if (!kv_ || !kv_->sharedRegion()) return std::nullopt;
  return describeShared(*backend_, *kv_, state_.get(), info_.numKvBlocks, info_.numStateSlots);
}

// Every call that writes the KV cache or the state (step, importKvBlocks, importStateSlot)
// waits for its device work before it returns and lets go of the step mutex, so what a
// returned step wrote is in place: the fence has nothing to wait for, and takes no mutex
// (a step in flight writes only blocks its own sequences hold, none of the handed-out ones).
void Engine::kvFence() { requireKvCache("kvFence"); }

int Engine::openKvPeer(const KvShareDescriptor& d) {
  requireKvCache("openKvPeer");
  auto peer = std::make_shared<const KvPeer>(*backend_, *kv_, state_.get(), d);
  std::lock_guard<std::mutex> lock(peersMu_);
  const int id = nextKvPeer_++;
  kvPeers_.emplace(id, std::move(peer));
  return id;
}

std::shared_ptr<const KvPeer> Engine::kvPeer(int peer, const char* what) {
  std::lock_guard<std::mutex> lock(peersMu_);
  auto it = kvPeers_.find(peer);
  AFD_CHECK(it != kvPeers_.end(), what << ": no open KV peer " << peer << " (openKvPeer's id; closed?)");
  return it->second;
}

// The pulls run beside the step, not behind it: their destination blocks and slot belong to
// an import no step in flight reads or writes (the scheduler holds them, and a finished
// sequence's slot is given back only after its last step), and the peer mapping is held
// here, so a close meanwhile unmaps it after the copy.
void Engine::pullKvBlocks(int peer, const std::vector<int32_t>& srcIds, const std::vector<int32_t>& dstIds) {
  requireKvCache("pullKvBlocks");
  kvPeer(peer, "pullKvBlocks")->pullBlocks(*backend_, *kv_, srcIds, dstIds, info_.numKvBlocks);
}

void Engine::pullStateSlot(int peer, int srcSlot, int dstSlot) {
  requireStateSlots("pullStateSlot");
  kvPeer(peer, "pullStateSlot")->pullState(*backend_, *state_, srcSlot, dstSlot);
}

void Engine::closeKvPeer(int peer) {
  std::lock_guard<std::mutex> lock(peersMu_);
  kvPeers_.erase(peer);
}

}  // namespace afd
