#include "ep/device-exchange.h"

#include "core/error.h"
#include "runtime/registry.h"

namespace afd {

std::unique_ptr<EpDeviceExchange> buildEpDeviceExchange(EpTransport transport, Backend& backend,
                                                        const EpDeviceShape& shape, comm::EpMesh& mesh, comm::StopFlag stop) {
  const char* name = nameOf(transport);
  AFD_CHECK(movesDeviceMemory(transport),
            "epTransport " << name << " is not a device transport for the expert-parallel exchange (device ones: peer, nccl)");
  AFD_CHECK(!backend.sharesHostMemory(), "epTransport " << name << " moves device memory: load the FFN engines with --backend cuda (this one runs on "
                                             << backend.name() << "), or use epTransport tcp");
  Registry::EpExchangeFactory build = registry().epExchange(transport);
  AFD_CHECK(build != nullptr, "epTransport " << name << " needs the CUDA build of the addon (this one is CPU-only); use epTransport tcp");
  return build(backend, shape, mesh, stop);
}

}  // namespace afd
