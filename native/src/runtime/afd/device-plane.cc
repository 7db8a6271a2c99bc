#include "runtime/afd/device-plane.h"

#include "core/error.h"

namespace afd {

#ifdef AFD_WITH_CUDA
// Implemented in cuda/nccl/nccl-role-plane.cc and cuda/peer/peer-role-plane.cc; weak so a
// build without them says so clearly.
__attribute__((weak)) std::vector<uint8_t> ncclRoleBootstrap();
__attribute__((weak)) std::unique_ptr<comm::DataPlane> createNcclRolePlane(Backend& backend, bool ffnRole,
                                                                           const std::vector<std::vector<uint8_t>>& blobs,
                                                                           int stepDeadlineMs, const std::string& peerName);
__attribute__((weak)) std::unique_ptr<comm::DataPlane> buildPeerRolePlane(Backend& backend, bool ffnRole, int numPeers,
                                                                          const DevicePlaneOptions& options,
                                                                          const DevicePlaneExchange& exchange,
                                                                          const std::string& peerName);
#endif

bool isDeviceConnector(const std::string& connector) {
  if (connector == "tcp") return false;
  if (connector == "nccl" || connector == "peer") return true;
  AFD_FAIL("unknown connector \"" << connector << "\" (known: tcp, nccl, peer)");
  return false;
}

void requireConnectorBackend(const std::string& connector, const Backend& backend, const char* role) {
  AFD_CHECK(!isDeviceConnector(connector) || !backend.sharesHostMemory(),
            "connector \"" << connector << "\" moves device memory: load the " << role << " engine with --backend cuda (it runs on "
                           << backend.name() << "), or use connector tcp");
}

namespace {
void requireDevicePlane(const std::string& connector, Backend& backend) {
  AFD_CHECK(isDeviceConnector(connector),
            "connector \"" << connector << "\" is not a device data plane (known: nccl, peer; tcp moves host memory)");
#ifdef AFD_WITH_CUDA
  AFD_CHECK(connector != "nccl" || createNcclRolePlane != nullptr, "this CUDA build lacks the NCCL role plane; use connector tcp");
  AFD_CHECK(connector != "peer" || buildPeerRolePlane != nullptr, "this CUDA build lacks the peer-memory role plane; use connector nccl or tcp");
#else
  AFD_FAIL("connector \"" << connector << "\" needs the CUDA build of the addon (this one is CPU-only); rebuild with "
                             "AFD_CUDA=on on a machine with nvcc, or set \"connector\": \"tcp\"");
#endif
  requireConnectorBackend(connector, backend, "role's");
}
}  // namespace

std::unique_ptr<comm::DataPlane> buildDevicePlane(const std::string& connector, Backend& backend, bool ffnRole,
                                                  int numPeers, const DevicePlaneOptions& options,
                                                  const DevicePlaneExchange& exchange, const std::string& peerName) {
  requireDevicePlane(connector, backend);
  AFD_CHECK(numPeers >= 1 && (ffnRole || numPeers == 1), "device plane: wrong number of peers (" << numPeers << ")");
#ifdef AFD_WITH_CUDA
  if (connector == "peer") return buildPeerRolePlane(backend, ffnRole, numPeers, options, exchange, peerName);
  // nccl: one way, one unique id per pair from the FFN rank.
  std::vector<std::vector<uint8_t>> blobs;
  for (int p = 0; p < numPeers; ++p) {
    if (ffnRole) {
      blobs.push_back(ncclRoleBootstrap());
      exchange.send(p, blobs.back());
    } else {
      blobs.push_back(exchange.recv(p));
    }
  }
  return createNcclRolePlane(backend, ffnRole, blobs, options.stepDeadlineMs, peerName);
#else
  (void)options;
  (void)exchange;
  (void)peerName;
  return nullptr;
#endif
}

}  // namespace afd
