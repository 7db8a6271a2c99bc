// What the CUDA build adds to the registry (runtime/registry.h), called when the registry
// is first used: the "cuda" backend, the device data planes of connectors nccl and peer,
// and the expert-parallel exchanges of epTransport peer and nccl. cuBLAS, cuBLASLt and
// NCCL stay dlopen()ed by the code these build (cuda/libraries.h), so registering them
// loads nothing.
#include <memory>

#include "core/backend-options.h"
#include "cuda/cuda-backend.h"
#include "cuda/device-planes.h"
#include "cuda/ep/ep-ipc-exchange.h"
#include "cuda/ep/ep-nccl-exchange.h"
#include "runtime/registry.h"

namespace afd {

namespace {
std::unique_ptr<Backend> createCudaBackend(const BackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options.deviceIndex, options.cuda);
}
}  // namespace

void registerCudaFactories(Registry& registry) {
  registry.addBackend("cuda", createCudaBackend);
  registry.addDevicePlane(ConnectorKind::Nccl, cuda::buildNcclRolePlane);
  registry.addDevicePlane(ConnectorKind::Peer, cuda::buildIpcRolePlane);
  registry.addEpExchange(EpTransport::Peer, cuda::buildEpIpcExchange);
  registry.addEpExchange(EpTransport::Nccl, cuda::buildEpNcclExchange);
}

}  // namespace afd
