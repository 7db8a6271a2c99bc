#include "cuda/nccl/nccl-wire.h"

#include "comm/comm-error.h"
#include "core/error.h"

namespace afd::cuda {

NcclWire::NcclWire(std::vector<std::unique_ptr<nccl::NcclComm>> comms, int peerRank, size_t stageInboxBytes,
                   size_t controlInboxBytes, std::string peer)
    : comms_(std::move(comms)),
      peerRank_(peerRank),
      stageBytes_((stageInboxBytes + 255) / 256 * 256),
      controlBytes_((controlInboxBytes + 255) / 256 * 256),
      inboxes_("NCCL wire inboxes", stageBytes_ * kWireStages * kWireSlots + controlBytes_ * kWireSlots),
      peer_(std::move(peer)) {
  AFD_CHECK(!comms_.empty() && comms_[0], "NcclWire needs at least stage 0's communicator");
  for (auto& c : comms_) raw_.push_back(c.get());
}

void* NcclWire::inbox(int channel, int slot) {
  char* base = inboxes_.as<char>();
  if (channel == kControlChannel) return base + stageBytes_ * kWireStages * kWireSlots + controlBytes_ * slot;
  return base + stageBytes_ * (channel * kWireSlots + slot);
}

nccl::NcclComm& NcclWire::commOf(int channel) {
  const int stage = channel == kControlChannel ? 0 : channel;
  AFD_CHECK(stage < static_cast<int>(comms_.size()) && comms_[stage],
            "NcclWire: no communicator for stage " << stage << " (DBO was not enabled at bootstrap)");
  nccl::NcclComm& c = *comms_[stage];
  if (c.aborted()) {
    throw afd::comm::CommError(afd::comm::CommErrorKind::kPeerClosed,
                               "the NCCL data plane to " + peer_ + " was aborted after an earlier failure; restart the peer");
  }
  return c;
}

void NcclWire::send(int channel, int slot, const void* src, size_t bytes, cudaStream_t stream) {
  AFD_CHECK(bytes <= inboxBytes(channel), "NcclWire: " << bytes << " bytes exceed the inbox of " << inboxBytes(channel));
  (void)slot;
  nccl::NcclComm& c = commOf(channel);
  nccl::checkNccl(nccl::ncclApi().send(src, bytes, nccl::ncclUint8, peerRank_, c.get(), stream), "ncclSend");
}

void NcclWire::recv(int channel, int slot, size_t bytes, cudaStream_t stream) {
  AFD_CHECK(bytes <= inboxBytes(channel), "NcclWire: " << bytes << " bytes exceed the inbox of " << inboxBytes(channel));
  nccl::NcclComm& c = commOf(channel);
  nccl::checkNccl(nccl::ncclApi().recv(inbox(channel, slot), bytes, nccl::ncclUint8, peerRank_, c.get(), stream),
                  "ncclRecv");
}

void NcclWire::wait(cudaEvent_t event, const afd::comm::Deadline& deadline, afd::comm::StopFlag stop) {
  nccl::waitEventBounded(event, deadline, peer_, raw_.data(), static_cast<int>(raw_.size()), nullptr, stop, peerLost_);
}

void NcclWire::abort() {
  for (auto* c : raw_)
    if (c) c->abort();
}

}  // namespace afd::cuda
