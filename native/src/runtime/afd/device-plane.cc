#include "runtime/afd/device-plane.h"

#include "core/error.h"
#include "runtime/registry.h"

namespace afd {

void requireConnectorBackend(ConnectorKind connector, const Backend& backend, const char* role) {
  AFD_CHECK(!movesDeviceMemory(connector) || !backend.sharesHostMemory(),
            "connector \"" << nameOf(connector) << "\" moves device memory: load the " << role
                           << " engine with --backend cuda (it runs on " << backend.name() << "), or use connector tcp");
}

std::unique_ptr<comm::DataPlane> buildDevicePlane(ConnectorKind connector, Backend& backend, bool ffnRole,
                                                  int numPeers, const DevicePlaneOptions& options,
                                                  const DevicePlaneExchange& exchange, const std::string& peerName) {
  AFD_CHECK(movesDeviceMemory(connector),
            "connector \"" << nameOf(connector) << "\" is not a device data plane (known: nccl, peer; tcp moves host memory)");
  Registry::DevicePlaneFactory build = registry().devicePlane(connector);
  AFD_CHECK(build != nullptr, "connector \"" << nameOf(connector)
                                             << "\" needs the CUDA build of the addon (this one is CPU-only); rebuild with "
                                                "AFD_CUDA=on on a machine with nvcc, or set \"connector\": \"tcp\"");
  requireConnectorBackend(connector, backend, "role's");
  AFD_CHECK(numPeers >= 1 && (ffnRole || numPeers == 1), "device plane: wrong number of peers (" << numPeers << ")");
  return build(backend, ffnRole, numPeers, options, exchange, peerName);
}

}  // namespace afd
