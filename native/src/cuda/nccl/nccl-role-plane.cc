// The role processes' NCCL data plane (runtime/afd/device-plane.h): bootstrap blobs are
// NCCL unique ids; the plane runs on the CUDA backend's device and stream.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm-error.h"
#include "core/backend.h"
#include "core/error.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/device-planes.h"
#include "cuda/nccl/nccl-data-plane.h"

namespace afd::cuda {

namespace {
// The FFN rank's bootstrap blob for one pair: a fresh NCCL unique id.
std::vector<uint8_t> newUniqueIdBlob() {
  const nccl::ncclUniqueId id = nccl::newUniqueId();
  std::vector<uint8_t> blob(sizeof(id));
  std::memcpy(blob.data(), &id, sizeof(id));
  return blob;
}
}  // namespace

std::unique_ptr<comm::DataPlane> buildNcclRolePlane(Backend& backend, bool ffnRole, int numPeers,
                                                    const DevicePlaneOptions& options, const DevicePlaneExchange& exchange,
                                                    const std::string& peerName) {
  auto* cudaBackend = dynamic_cast<CudaBackend*>(&backend);
  AFD_CHECK(cudaBackend != nullptr, "connector \"nccl\" needs the CUDA backend (this engine runs on " << backend.name() << ")");
  // Bootstrap one way: one unique id per pair, from the FFN rank.
  std::vector<std::vector<uint8_t>> blobs;
  for (int p = 0; p < numPeers; ++p) {
    if (ffnRole) {
      blobs.push_back(newUniqueIdBlob());
      exchange.send(p, blobs.back());
    } else {
      blobs.push_back(exchange.recv(p));
    }
  }
  // The calling thread (rendezvous / watcher) must target the engine's device.
  AFD_CUDA_CHECK(cudaSetDevice(backend.device().index));
  std::vector<std::unique_ptr<nccl::NcclComm>> comms;
  for (size_t p = 0; p < blobs.size(); ++p) {
    if (blobs[p].size() != sizeof(nccl::ncclUniqueId)) {
      throw comm::CommError(comm::CommErrorKind::kProtocol,
                            peerName + " sent a " + std::to_string(blobs[p].size()) + "-byte NCCL unique id (expected " +
                                std::to_string(sizeof(nccl::ncclUniqueId)) + "); do both sides run the same --connector (nccl) and the same NCCL build?");
    }
    nccl::ncclUniqueId id;
    std::memcpy(&id, blobs[p].data(), sizeof(id));
    const std::string who = ffnRole ? "attention peer " + std::to_string(p) + " of " + peerName : peerName;
    comms.push_back(std::make_unique<nccl::NcclComm>(id, 2, pairRank(ffnRole), who));
  }
  return std::make_unique<NcclDataPlane>(std::move(comms), ffnRole, options.stepDeadlineMs, cudaBackend->stream());
}

}  // namespace afd::cuda
