#include "runtime/afd-device-plane.h"

#include "core/error.h"

namespace afd {

#ifdef AFD_WITH_CUDA
// Implemented in cuda/nccl/nccl-role-plane.cc; weak so a build without it says so clearly.
__attribute__((weak)) std::vector<uint8_t> ncclRoleBootstrap();
__attribute__((weak)) std::unique_ptr<comm::DataPlane> createNcclRolePlane(Backend& backend, bool ffnRole,
                                                                           const std::vector<std::vector<uint8_t>>& blobs,
                                                                           int stepDeadlineMs, const std::string& peerName);
#endif

namespace {
void requireNccl(const std::string& connector) {
  AFD_CHECK(connector == "nccl", "connector \"" << connector << "\" is not a device data plane (known: nccl; tcp moves host memory)");
#ifdef AFD_WITH_CUDA
  AFD_CHECK(createNcclRolePlane != nullptr, "this CUDA build lacks the NCCL role plane; use connector tcp");
#else
  AFD_FAIL("connector \"nccl\" needs the CUDA build of the addon (this one is CPU-only); rebuild with AFD_CUDA=on on a "
           "machine with nvcc, or set \"connector\": \"tcp\"");
#endif
}
}  // namespace

bool isDeviceConnector(const std::string& connector) {
  if (connector == "tcp") return false;
  if (connector == "nccl") return true;
  AFD_FAIL("unknown connector \"" << connector << "\" (known: tcp, nccl)");
  return false;
}

std::vector<uint8_t> makeDevicePlaneBootstrap(const std::string& connector) {
  requireNccl(connector);
#ifdef AFD_WITH_CUDA
  return ncclRoleBootstrap();
#else
  return {};
#endif
}

std::unique_ptr<comm::DataPlane> createDevicePlane(const std::string& connector, Backend& backend, bool ffnRole,
                                                   const std::vector<std::vector<uint8_t>>& blobs, int stepDeadlineMs,
                                                   const std::string& peerName) {
  requireNccl(connector);
  AFD_CHECK(!backend.sharesHostMemory(), "connector \"nccl\" needs --backend cuda (this engine runs on " << backend.name() << ")");
#ifdef AFD_WITH_CUDA
  return createNcclRolePlane(backend, ffnRole, blobs, stepDeadlineMs, peerName);
#else
  (void)ffnRole;
  (void)blobs;
  (void)stepDeadlineMs;
  (void)peerName;
  return nullptr;
#endif
}

}  // namespace afd
