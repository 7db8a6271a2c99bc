#include "cuda/nccl/nccl-data-plane.h"

#include "comm/comm-error.h"
#include "core/error.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

namespace {
cudaStream_t streamOf(afd::comm::CommStream s) { return static_cast<cudaStream_t>(s.handle); }
}  // namespace

NcclDataPlane::NcclDataPlane(std::unique_ptr<nccl::NcclComm> comm, bool ffnRole, int blockSize, int stepDeadlineMs)
    : comm_(std::move(comm)), ffnRole_(ffnRole), blockSize_(blockSize), stepDeadlineMs_(stepDeadlineMs) {
  AFD_CHECK(comm_ && comm_->size() == blockSize + 1,
            "NCCL data plane: the subgroup communicator must have blockSize + 1 = " << blockSize + 1 << " ranks");
  AFD_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  const size_t n = static_cast<size_t>(numPeers()) * 2;
  start_.resize(n);
  end_.resize(n);
  recorded_.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    AFD_CUDA_CHECK(cudaEventCreate(&start_[i]));
    AFD_CUDA_CHECK(cudaEventCreate(&end_[i]));
  }
}

NcclDataPlane::~NcclDataPlane() {
  for (auto e : start_) cudaEventDestroy(e);
  for (auto e : end_) cudaEventDestroy(e);
  if (done_) cudaEventDestroy(done_);
}

void NcclDataPlane::send(int peer, const void* src, size_t bytes, const afd::comm::TransferTag&,
                         afd::comm::CommStream stream) {
  AFD_CHECK(peer >= 0 && peer < numPeers(), "NCCL data plane: no peer " << peer);
  const size_t slot = static_cast<size_t>(peer) * 2 + 1;
  if (sampling_) AFD_CUDA_CHECK(cudaEventRecord(start_[slot], streamOf(stream)));
  nccl::checkNccl(nccl::ncclApi().send(src, bytes, nccl::ncclUint8, rankOf(peer), comm_->get(), streamOf(stream)),
                  "ncclSend");
  if (sampling_) {
    AFD_CUDA_CHECK(cudaEventRecord(end_[slot], streamOf(stream)));
    recorded_[slot] = true;
  }
}

void NcclDataPlane::recv(int peer, void* dst, size_t bytes, const afd::comm::TransferTag&, afd::comm::CommStream stream) {
  AFD_CHECK(peer >= 0 && peer < numPeers(), "NCCL data plane: no peer " << peer);
  const size_t slot = static_cast<size_t>(peer) * 2;
  if (sampling_) AFD_CUDA_CHECK(cudaEventRecord(start_[slot], streamOf(stream)));
  nccl::checkNccl(nccl::ncclApi().recv(dst, bytes, nccl::ncclUint8, rankOf(peer), comm_->get(), streamOf(stream)),
                  "ncclRecv");
  if (sampling_) {
    AFD_CUDA_CHECK(cudaEventRecord(end_[slot], streamOf(stream)));
    recorded_[slot] = true;
  }
}

void NcclDataPlane::groupStart() { nccl::checkNccl(nccl::ncclApi().groupStart(), "ncclGroupStart"); }
void NcclDataPlane::groupEnd() { nccl::checkNccl(nccl::ncclApi().groupEnd(), "ncclGroupEnd"); }

void NcclDataPlane::synchronize(afd::comm::CommStream stream) {
  AFD_CUDA_CHECK(cudaEventRecord(done_, streamOf(stream)));
  nccl::NcclComm* comms[1] = {comm_.get()};
  const std::string peer = ffnRole_ ? "an attention rank of the block" : "the FFN rank";
  nccl::waitEventBounded(done_, afd::comm::Deadline::afterMs(stepDeadlineMs_), peer, comms, 1);
}

uint64_t NcclDataPlane::lastWireTimeUs(int peer, bool send) const {
  const size_t slot = static_cast<size_t>(peer) * 2 + (send ? 1 : 0);
  if (slot >= recorded_.size() || !recorded_[slot]) return 0;
  float ms = 0;
  if (cudaEventElapsedTime(&ms, start_[slot], end_[slot]) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return static_cast<uint64_t>(ms * 1000.0f);
}

}  // namespace afd::cuda
