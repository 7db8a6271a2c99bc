#include "cuda/ep/ep-ipc-exchange.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "comm/comm-error.h"
#include "core/error.h"
#include "core/host-name.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

namespace {

constexpr char kMagic[8] = {'A', 'F', 'D', 'E', 'P', 'X', '1', '\0'};

// One rank's half of the bootstrap.
struct Blob {
  EpBlobHeader h;
  uint64_t address = 0;  // the region's device address (used as is by ranks of the same process)
  cudaIpcMemHandle_t handle;
};

}  // namespace

EpIpcExchange::EpIpcExchange(CudaBackend& backend, const EpDeviceShape& shape)
    : EpExchangeBase(backend, shape, "peer", 8 * 4 * static_cast<size_t>(shape.numRanks)),
      seq_("expert-parallel peer exchange flag sequence", 8 * 8 * static_cast<size_t>(shape.numRanks)) {
  AFD_CUDA_CHECK(cudaMemset(seq_.data(), 0, seq_.bytes()));
  AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&hostError_), sizeof(int), cudaHostAllocMapped));
  *hostError_ = 0;
  AFD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceError_), hostError_, 0));
  bases_.assign(shape.numRanks, nullptr);
  mapped_.assign(shape.numRanks, false);
  bases_[shape.rank] = region_.as<char>();
}

EpIpcExchange::~EpIpcExchange() {
  abort();
  // Work still queued may touch the regions: let it drain (every wait of this exchange
  // returns at once now) before they are unmapped and freed.
  cudaStreamSynchronize(stream_);
  cudaGetLastError();
  for (size_t r = 0; r < bases_.size(); ++r) {
    if (mapped_[r]) cudaIpcCloseMemHandle(bases_[r]);
  }
  if (hostError_) cudaFreeHost(hostError_);
}

std::vector<uint8_t> EpIpcExchange::bootstrapBlob() const {
  Blob b{};
  b.h = blobHeader(kMagic);
  b.address = reinterpret_cast<uint64_t>(region_.data());
  AFD_CUDA_CHECK(cudaIpcGetMemHandle(&b.handle, region_.data()));
  return blobBytes(b);
}

void EpIpcExchange::connect(const std::vector<std::vector<uint8_t>>& blobs) {
  checkBlobCount(blobs, "peer");
  const int F = shape_.numRanks;
  const std::string mine = hostName();
  for (int r = 0; r < F; ++r) {
    if (r == shape_.rank) continue;
    const std::string who = "FFN rank " + std::to_string(r) + " of the expert-parallel group";
    Blob b{};
    readBlob(blobs[r], r, kMagic, &b, sizeof b, "a peer");
    if (mine != b.h.host) {
      throw comm::EpGroupError(comm::CommErrorKind::kConfig, "epTransport peer needs every FFN rank on one host: " + who + " runs on " +
                                                                 b.h.host + ", this rank on " + mine + "; use epTransport tcp across hosts");
    }
    if (b.h.pid == static_cast<int32_t>(getpid())) {
      bases_[r] = reinterpret_cast<char*>(b.address);  // same process: CUDA refuses to open its own handle
      continue;
    }
    void* p = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&p, b.handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw comm::EpGroupError(comm::CommErrorKind::kConfig, std::string("expert-parallel peer exchange: cannot map the memory of ") + who +
                                                                 " (device " + std::to_string(b.h.device) + ", pid " + std::to_string(b.h.pid) +
                                                                 "; cudaIpcOpenMemHandle: " + cudaGetErrorString(e) +
                                                                 "); its GPU must be visible here with P2P, or use epTransport tcp");
    }
    bases_[r] = static_cast<char*>(p);
    mapped_[r] = true;
  }
}

ep::RankPointers EpIpcExchange::pointers(size_t offset) const {
  ep::RankPointers p{};
  for (int r = 0; r < shape_.numRanks; ++r) p.at[r] = bases_[r] + offset;
  return p;
}

void EpIpcExchange::signalAndWait(int layer, int phase, int stage) {
  ep::RankFlags flags{};
  for (int r = 0; r < shape_.numRanks; ++r) {
    flags.at[r] = reinterpret_cast<unsigned long long*>(bases_[r] + flagOffset(phase, stage, shape_.rank));
  }
  ep::epSignal(flags, seqAt(0, phase, stage), shape_.numRanks, stream_);
  const unsigned long long timeoutNs = static_cast<unsigned long long>(shape_.waitDeadlineMs) * 1000000ull;
  ep::epWait(reinterpret_cast<unsigned long long*>(region_.as<char>() + flagOffset(phase, stage, 0)), seqAt(1, phase, stage),
             shape_.numRanks, timeoutNs, (layer * 2 + phase) * 2 + stage, deviceError_, stream_);
}

ep::RankPointers EpIpcExchange::dispatchTargets(int stage, bool* sectionByDestination) {
  *sectionByDestination = false;  // straight into section `rank` of every owner's block
  return pointers(dispatchOffset(stage));
}

std::string EpIpcExchange::describeTimeout(int err) const {
  const int F = shape_.numRanks, peer = (err - 1) % F, place = (err - 1) / F;
  const int stage = place % 2, phase = (place / 2) % 2, layer = place / 4;
  return "FFN rank " + std::to_string(peer) + " of the expert-parallel group did not answer within " +
         std::to_string(shape_.waitDeadlineMs) + " ms inside the step (device wait for its " + (phase == 0 ? "dispatch" : "combine") +
         " of layer " + std::to_string(layer) + ", stage " + std::to_string(stage) + ")";
}

void EpIpcExchange::finishStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer) {
  waitStep(deadline, stop, closedPeer, "the expert-parallel step did not finish within the step deadline");
}

void EpIpcExchange::checkTransport(unsigned /*polls*/) {
  const int err = *static_cast<volatile int*>(hostError_);
  if (err > 0) fail(comm::CommErrorKind::kTimeout, describeTimeout(err));
  if (err < 0) fail(comm::CommErrorKind::kPeerClosed, "the expert-parallel peer exchange was aborted earlier; the group forms again");
}

void EpIpcExchange::abort() {
  if (hostError_ && *hostError_ == 0) *static_cast<volatile int*>(hostError_) = -1;
}

std::unique_ptr<EpDeviceExchange> buildEpIpcExchange(Backend& backend, const EpDeviceShape& shape, comm::EpMesh& mesh,
                                                      comm::StopFlag stop) {
  return buildOverMesh<EpIpcExchange>("peer", backend, shape, mesh, stop);
}

}  // namespace afd::cuda
