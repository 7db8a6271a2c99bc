#include "runtime/ep-device-exchange.h"

#include "core/error.h"

namespace afd {

#ifdef AFD_WITH_CUDA
// Implemented in cuda/ep/ep-peer-exchange.cc; weak so a build without it says so clearly.
__attribute__((weak)) std::unique_ptr<EpDeviceExchange> buildEpPeerExchange(Backend& backend, const EpDeviceShape& shape,
                                                                            comm::EpMesh& mesh, comm::StopFlag stop);
#endif

std::unique_ptr<EpDeviceExchange> buildEpDeviceExchange(const std::string& transport, Backend& backend,
                                                        const EpDeviceShape& shape, comm::EpMesh& mesh, comm::StopFlag stop) {
  AFD_CHECK(transport == "peer", "unknown device transport \"" << transport << "\" for the expert-parallel exchange (known: peer)");
  AFD_CHECK(!backend.sharesHostMemory(), "epTransport peer moves device memory: load the FFN engines with --backend cuda (this one runs on "
                                             << backend.name() << "), or use epTransport tcp");
#ifdef AFD_WITH_CUDA
  AFD_CHECK(buildEpPeerExchange != nullptr, "this CUDA build lacks the expert-parallel peer exchange; use epTransport tcp");
  return buildEpPeerExchange(backend, shape, mesh, stop);
#else
  (void)shape;
  (void)mesh;
  (void)stop;
  AFD_FAIL("epTransport peer needs the CUDA build of the addon (this one is CPU-only); use epTransport tcp");
  return nullptr;
#endif
}

}  // namespace afd
