#include "cuda/nccl/nccl-data-plane.h"

#include "comm/comm-error.h"
#include "core/error.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

NcclDataPlane::NcclDataPlane(std::vector<std::unique_ptr<nccl::NcclComm>> comms, bool ffnRole, int stepDeadlineMs,
                             cudaStream_t defaultStream)
    : comms_(std::move(comms)),
      ffnRole_(ffnRole),
      stepDeadlineMs_(stepDeadlineMs),
      defaultStream_(defaultStream),
      timer_(static_cast<int>(comms_.size())) {
  AFD_CHECK(!comms_.empty() && (ffnRole || comms_.size() == 1),
            "NCCL data plane: an attention rank has one pair communicator, an FFN rank one per peer (got " << comms_.size()
                                                                                                        << ")");
  for (auto& c : comms_) {
    AFD_CHECK(c && c->size() == 2 && c->rank() == pairRank(ffnRole), "NCCL data plane: pair communicators have 2 ranks");
    raw_.push_back(c.get());
  }
  AFD_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
}

NcclDataPlane::~NcclDataPlane() {
  // Abort rather than destroy: the peer may be gone (a replaced plane after a loss),
  // and ncclCommAbort is bounded where a destroy could wait on it.
  abort();
  if (done_) cudaEventDestroy(done_);
}

void NcclDataPlane::send(int peer, const void* src, size_t bytes, const afd::comm::TransferTag&,
                         afd::comm::CommStream stream) {
  AFD_CHECK(peer >= 0 && peer < numPeers(), "NCCL data plane: no peer " << peer);
  if (sampling_) timer_.start(peer, true, streamOf(stream));
  nccl::checkNccl(nccl::ncclApi().send(src, bytes, nccl::ncclUint8, otherRank(), comms_[peer]->get(), streamOf(stream)),
                  "ncclSend");
  if (sampling_) timer_.end(peer, true, streamOf(stream));
}

void NcclDataPlane::recv(int peer, void* dst, size_t bytes, const afd::comm::TransferTag&, afd::comm::CommStream stream) {
  AFD_CHECK(peer >= 0 && peer < numPeers(), "NCCL data plane: no peer " << peer);
  if (sampling_) timer_.start(peer, false, streamOf(stream));
  nccl::checkNccl(nccl::ncclApi().recv(dst, bytes, nccl::ncclUint8, otherRank(), comms_[peer]->get(), streamOf(stream)),
                  "ncclRecv");
  if (sampling_) timer_.end(peer, false, streamOf(stream));
}

void NcclDataPlane::groupStart() { nccl::checkNccl(nccl::ncclApi().groupStart(), "ncclGroupStart"); }
void NcclDataPlane::groupEnd() { nccl::checkNccl(nccl::ncclApi().groupEnd(), "ncclGroupEnd"); }

void NcclDataPlane::synchronize(afd::comm::CommStream stream) {
  AFD_CUDA_CHECK(cudaEventRecord(done_, streamOf(stream)));
  const std::string peer = ffnRole_ ? "an attention rank of the block (NCCL)" : "the FFN rank (NCCL)";
  nccl::waitEventBounded(done_, afd::comm::Deadline::afterMs(stepDeadlineMs_), peer, raw_.data(),
                         static_cast<int>(raw_.size()), nullptr, nullptr, peerLost_);
}

afd::comm::WireTime NcclDataPlane::wireTime(int peer, bool send) const { return timer_.span(peer, send); }

}  // namespace afd::cuda
