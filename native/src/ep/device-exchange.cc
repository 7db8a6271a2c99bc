#include "ep/device-exchange.h"

#include "core/error.h"

namespace afd {

#ifdef AFD_WITH_CUDA
// Implemented in cuda/ep/ep-peer-exchange.cc and cuda/ep/ep-nccl-exchange.cc; weak so a
// build without them says so clearly.
__attribute__((weak)) std::unique_ptr<EpDeviceExchange> buildEpPeerExchange(Backend& backend, const EpDeviceShape& shape,
                                                                            comm::EpMesh& mesh, comm::StopFlag stop);
__attribute__((weak)) std::unique_ptr<EpDeviceExchange> buildEpNcclExchange(Backend& backend, const EpDeviceShape& shape,
                                                                            comm::EpMesh& mesh, comm::StopFlag stop);
#endif

std::unique_ptr<EpDeviceExchange> buildEpDeviceExchange(const std::string& transport, Backend& backend,
                                                        const EpDeviceShape& shape, comm::EpMesh& mesh, comm::StopFlag stop) {
  AFD_CHECK(transport == "peer" || transport == "nccl",
            "unknown device transport \"" << transport << "\" for the expert-parallel exchange (known: peer, nccl)");
  AFD_CHECK(!backend.sharesHostMemory(), "epTransport " << transport << " moves device memory: load the FFN engines with --backend cuda (this one runs on "
                                             << backend.name() << "), or use epTransport tcp");
#ifdef AFD_WITH_CUDA
  auto* build = transport == "peer" ? buildEpPeerExchange : buildEpNcclExchange;
  AFD_CHECK(build != nullptr, "this CUDA build lacks the expert-parallel " << transport << " exchange; use epTransport tcp");
  return build(backend, shape, mesh, stop);
#else
  (void)shape;
  (void)mesh;
  (void)stop;
  AFD_FAIL("epTransport " << transport << " needs the CUDA build of the addon (this one is CPU-only); use epTransport tcp");
  return nullptr;
#endif
}

}  // namespace afd
