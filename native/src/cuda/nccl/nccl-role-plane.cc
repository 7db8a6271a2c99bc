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
#include "cuda/nccl/nccl-data-plane.h"

namespace afd {

std::vector<uint8_t> ncclRoleBootstrap() {
  const cuda::nccl::ncclUniqueId id = cuda::nccl::newUniqueId();
  std::vector<uint8_t> blob(sizeof(id));
  std::memcpy(blob.data(), &id, sizeof(id));
  return blob;
}

std::unique_ptr<comm::DataPlane> createNcclRolePlane(Backend& backend, bool ffnRole,
                                                     const std::vector<std::vector<uint8_t>>& blobs, int stepDeadlineMs,
                                                     const std::string& peerName) {
  auto* cudaBackend = dynamic_cast<cuda::CudaBackend*>(&backend);
  AFD_CHECK(cudaBackend != nullptr, "connector \"nccl\" needs the CUDA backend (this engine runs on " << backend.name() << ")");
  AFD_CHECK(!blobs.empty() && (ffnRole || blobs.size() == 1), "NCCL role plane: wrong number of bootstrap blobs (" << blobs.size() << ")");
  // The calling thread (rendezvous / watcher) must target the engine's device.
  AFD_CUDA_CHECK(cudaSetDevice(backend.device().index));
  std::vector<std::unique_ptr<cuda::nccl::NcclComm>> comms;
  for (size_t p = 0; p < blobs.size(); ++p) {
    if (blobs[p].size() != sizeof(cuda::nccl::ncclUniqueId)) {
      throw comm::CommError(comm::CommErrorKind::kProtocol,
                            peerName + " sent a " + std::to_string(blobs[p].size()) + "-byte NCCL unique id (expected " +
                                std::to_string(sizeof(cuda::nccl::ncclUniqueId)) + "); do both sides run the same --connector (nccl) and the same NCCL build?");
    }
    cuda::nccl::ncclUniqueId id;
    std::memcpy(&id, blobs[p].data(), sizeof(id));
    const std::string who = ffnRole ? "attention peer " + std::to_string(p) + " of " + peerName : peerName;
    comms.push_back(std::make_unique<cuda::nccl::NcclComm>(id, 2, cuda::pairRank(ffnRole), who));
  }
  return std::make_unique<cuda::NcclDataPlane>(std::move(comms), ffnRole, stepDeadlineMs, cudaBackend->stream());
}

}  // namespace afd
