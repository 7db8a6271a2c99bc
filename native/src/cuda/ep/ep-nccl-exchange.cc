#include "cuda/ep/ep-nccl-exchange.h"

#include <algorithm>
#include <cstring>

#include "comm/comm-error.h"
#include "core/error.h"
#include "cuda/cuda-check.h"
#include "ep/gpu-placement.h"

namespace afd::cuda {

namespace {

constexpr char kMagic[8] = {'A', 'F', 'D', 'E', 'P', 'N', '1', '\0'};

// One rank's half of the bootstrap.
struct Blob {
  EpBlobHeader h;
  char pciBusId[32];
  nccl::ncclUniqueId id;  // rank 0's is the group's
};

using nccl::checkNccl;
using nccl::ncclApi;
using nccl::ncclUint8;

}  // namespace

EpNcclExchange::EpNcclExchange(CudaBackend& backend, const EpDeviceShape& shape) : EpExchangeBase(backend, shape, "NCCL", 0) {
  failNote_ = "; the group's NCCL communicator was aborted (the group forms again)";
  outbox_ = DeviceBuffer("expert-parallel NCCL exchange outbox (" + std::to_string(shape.capMax) + " rows per section)", layout_.bytes);
  AFD_CUDA_CHECK(cudaMemset(outbox_.data(), 0, outbox_.bytes()));
  char bus[32] = {};
  AFD_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, backend.device().index));
  pciBusId_ = bus;
  if (shape.rank == 0) id_ = nccl::newUniqueId();
}

EpNcclExchange::~EpNcclExchange() {
  // A step that did not finish (a peer gone) leaves NCCL kernels waiting: abort them
  // before the blocks go; a finished one lets the communicator be destroyed normally.
  if (comm_ && cudaEventQuery(done_) == cudaErrorNotReady) abort();
  cudaStreamSynchronize(stream_);
  cudaGetLastError();
  comm_.reset();
}

std::vector<uint8_t> EpNcclExchange::bootstrapBlob() const {
  Blob b{};
  b.h = blobHeader(kMagic);
  std::memcpy(b.pciBusId, pciBusId_.data(), std::min(pciBusId_.size(), sizeof b.pciBusId - 1));
  b.id = id_;
  return blobBytes(b);
}

void EpNcclExchange::connect(const std::vector<std::vector<uint8_t>>& blobs) {
  checkBlobCount(blobs, "NCCL");
  const int F = shape_.numRanks;
  std::vector<Blob> all(F);
  std::vector<EpRankGpu> gpus(F);
  for (int r = 0; r < F; ++r) {
    Blob& b = all[r];
    readBlob(blobs[r], r, kMagic, &b, sizeof b, "an NCCL");
    b.pciBusId[sizeof b.pciBusId - 1] = '\0';
    gpus[r] = EpRankGpu{b.h.host, b.pciBusId};
  }
  const std::string shared = sharedGpuConflict(gpus);
  if (!shared.empty()) {
    throw comm::EpGroupError(comm::CommErrorKind::kConfig, "epTransport nccl needs every FFN rank on a GPU of its own (NCCL refuses two "
                                                           "ranks of a communicator on one GPU): " + shared +
                                                               "; use epTransport peer for FFN ranks that share a host's GPUs");
  }
  AFD_CUDA_CHECK(cudaSetDevice(backend_.device().index));
  try {
    comm_ = std::make_unique<nccl::NcclComm>(all[0].id, F, shape_.rank, "the expert-parallel group's FFN ranks");
  } catch (const comm::CommError& e) {
    throw comm::EpGroupError(e.kind(), std::string("expert-parallel NCCL exchange: ") + e.what());
  }
}

ep::RankPointers EpNcclExchange::dispatchTargets(int stage, bool* sectionByDestination) {
  *sectionByDestination = true;  // section d of the outbox, this rank's own straight into its block
  ep::RankPointers p{};
  for (int r = 0; r < shape_.numRanks; ++r) p.at[r] = r == shape_.rank ? dispatchBlock(stage) : outbox_.as<char>();
  return p;
}

void EpNcclExchange::moveDispatch(int /*layer*/, int stage) {
  const size_t cap = static_cast<size_t>(cap_), K = static_cast<size_t>(shape_.topK);
  // Section p of each array: counts[p] (one u32), ids and weights (cap x K), rows (cap rows).
  const size_t offset[4] = {0, layout_.ids, layout_.weights, layout_.rows};
  const size_t bytes[4] = {4, 4 * cap * K, 4 * cap * K, cap * rowBytes_};
  char* in = dispatchBlock(stage);
  const char* out = outbox_.as<char>();
  nccl::ncclComm_t comm = comm_->get();
  checkNccl(ncclApi().groupStart(), "ncclGroupStart (expert-parallel dispatch)");
  for (int p = 0; p < shape_.numRanks; ++p) {
    if (p == shape_.rank) continue;
    for (int i = 0; i < 4; ++i) {
      const size_t at = offset[i] + static_cast<size_t>(p) * bytes[i];
      checkNccl(ncclApi().send(out + at, bytes[i], ncclUint8, p, comm, stream_), "ncclSend (expert-parallel dispatch)");
      checkNccl(ncclApi().recv(in + at, bytes[i], ncclUint8, p, comm, stream_), "ncclRecv (expert-parallel dispatch)");
    }
  }
  checkNccl(ncclApi().groupEnd(), "ncclGroupEnd (expert-parallel dispatch)");
}

ep::RankPointers EpNcclExchange::returnTargets(int stage) {
  ep::RankPointers p{};  // null: moveCombine sends those sections from the partial sums
  p.at[shape_.rank] = combineBlock(stage);
  return p;
}

void EpNcclExchange::moveCombine(int /*layer*/, int stage) {
  const size_t bytes = static_cast<size_t>(cap_) * rowBytes_;
  char* in = combineBlock(stage);
  nccl::ncclComm_t comm = comm_->get();
  checkNccl(ncclApi().groupStart(), "ncclGroupStart (expert-parallel combine)");
  for (int p = 0; p < shape_.numRanks; ++p) {
    if (p == shape_.rank) continue;
    checkNccl(ncclApi().send(partialSection(p), bytes, ncclUint8, p, comm, stream_), "ncclSend (expert-parallel combine)");
    checkNccl(ncclApi().recv(in + static_cast<size_t>(p) * bytes, bytes, ncclUint8, p, comm, stream_), "ncclRecv (expert-parallel combine)");
  }
  checkNccl(ncclApi().groupEnd(), "ncclGroupEnd (expert-parallel combine)");
}

void EpNcclExchange::finishStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer) {
  AFD_CHECK(comm_ != nullptr && !comm_->aborted(), "the expert-parallel NCCL exchange was aborted earlier; the group forms again");
  // NCCL does not say which rank stalled; a rank whose process died closed its link.
  waitStep(deadline, stop, closedPeer,
           "the expert-parallel NCCL exchange did not finish within the step deadline: one of the group's other " +
               std::to_string(shape_.numRanks - 1) + " FFN ranks stopped answering");
}

void EpNcclExchange::checkTransport(unsigned polls) {
  if ((polls & 15u) != 0) return;
  try {
    comm_->checkAsync();
  } catch (const comm::CommError& e) {
    throw comm::EpGroupError(comm::CommErrorKind::kPeerClosed, std::string("expert-parallel NCCL exchange: ") + e.what());
  }
}

void EpNcclExchange::abort() {
  if (!comm_ || comm_->aborted()) return;
  cudaEventRecord(done_, stream_);  // after everything queued: the abort's drain mark
  comm_->abort(done_);
}

std::unique_ptr<EpDeviceExchange> buildEpNcclExchange(Backend& backend, const EpDeviceShape& shape, comm::EpMesh& mesh,
                                                      comm::StopFlag stop) {
  return buildOverMesh<EpNcclExchange>("nccl", backend, shape, mesh, stop);
}

}  // namespace afd::cuda
