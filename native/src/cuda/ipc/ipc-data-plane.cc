#include "cuda/ipc/ipc-data-plane.h"

#include "comm/comm-error.h"
#include "core/error.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

using afd::comm::TransferKind;

namespace {
const char* kindName(TransferKind k) {
  switch (k) {
    case TransferKind::kHidden: return "hidden states";
    case TransferKind::kRouterLogits: return "router logits";
    case TransferKind::kFfnOutput: return "FFN output";
  }
  return "message";
}
}  // namespace

IpcDataPlane::IpcDataPlane(std::vector<std::unique_ptr<IpcWire>> wires, bool ffnRole, int stepDeadlineMs,
                             cudaStream_t defaultStream, std::string inboxLimit)
    : wires_(std::move(wires)),
      stepDeadlineMs_(stepDeadlineMs),
      defaultStream_(defaultStream),
      inboxLimit_(std::move(inboxLimit)),
      timer_(static_cast<int>(wires_.size())) {
  AFD_CHECK(!wires_.empty() && (ffnRole || wires_.size() == 1),
            "peer-memory data plane: an attention rank has one wire, an FFN rank one per peer (got " << wires_.size() << ")");
  for (auto& w : wires_) AFD_CHECK(w != nullptr, "peer-memory data plane: missing wire");
  AFD_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
}

IpcDataPlane::~IpcDataPlane() {
  // A replaced plane (after a loss) may still have device waits spinning: end them.
  abort();
  if (done_) cudaEventDestroy(done_);
}

void IpcDataPlane::abort() {
  for (auto& w : wires_) w->abort();
}

void IpcDataPlane::setPeerLostFlag(afd::comm::StopFlag flag) {
  for (auto& w : wires_) w->setPeerLostFlag(flag);
}

void IpcDataPlane::check(int peer, size_t bytes, const afd::comm::TransferTag& tag, const char* what) const {
  AFD_CHECK(peer >= 0 && peer < numPeers(), "peer-memory data plane: no peer " << peer);
  AFD_CHECK(tag.stage < static_cast<uint32_t>(kWireStages),
            "peer-memory data plane: stage " << tag.stage << " of a " << what << " (a step has at most " << kWireStages << ")");
  const size_t cap = wires_[peer]->inboxBytes(static_cast<int>(tag.stage));
  if (bytes > cap) {
    AFD_FAIL("peer-memory data plane: " << kindName(tag.kind) << " of layer " << tag.layer << " stage " << tag.stage << " ("
                                        << bytes << " bytes) exceed the inbox of " << cap << " bytes (" << inboxLimit_
                                        << "); raise --max-num-batched-tokens on the FFN rank (and keep the attention "
                                           "ranks' value at or below it)");
  }
}

void IpcDataPlane::send(int peer, const void* src, size_t bytes, const afd::comm::TransferTag& tag,
                         afd::comm::CommStream stream) {
  check(peer, bytes, tag, "send");
  const cudaStream_t s = streamOf(stream);
  if (sampling_) timer_.start(peer, true, s);
  wires_[peer]->send(static_cast<int>(tag.stage), inboxSlot(tag.kind), src, bytes, s);
  if (sampling_) timer_.end(peer, true, s);
}

void IpcDataPlane::recv(int peer, void* dst, size_t bytes, const afd::comm::TransferTag& tag,
                         afd::comm::CommStream stream) {
  check(peer, bytes, tag, "receive");
  const cudaStream_t s = streamOf(stream);
  const int channel = static_cast<int>(tag.stage), slot = inboxSlot(tag.kind);
  if (sampling_) timer_.start(peer, false, s);
  IpcWire& w = *wires_[peer];
  w.recv(channel, slot, bytes, s);
  // The inbox is reused by the next message of this (stage, slot): copy it out in stream order.
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, w.inbox(channel, slot), bytes, cudaMemcpyDeviceToDevice, s));
  if (sampling_) timer_.end(peer, false, s);
}

void IpcDataPlane::synchronize(afd::comm::CommStream stream) {
  AFD_CUDA_CHECK(cudaEventRecord(done_, streamOf(stream)));
  const afd::comm::Deadline deadline = afd::comm::Deadline::afterMs(stepDeadlineMs_);
  try {
    // The first wait covers the event; the others only check their wire's error word
    // (a device wait that timed out lets the stream go on, so the event completes).
    for (auto& w : wires_) w->wait(done_, deadline, nullptr);
  } catch (...) {
    abort();  // every wire: device waits of the other peers stop spinning too
    throw;
  }
}

afd::comm::WireTime IpcDataPlane::wireTime(int peer, bool send) const { return timer_.span(peer, send); }

}  // namespace afd::cuda
