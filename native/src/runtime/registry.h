// The factories this addon was built with, looked up by name or kind (ggml's backend
// registry): the core builds backends, device data planes and expert-parallel exchanges
// through it and never names an implementation. The registry is filled on first use with
// what the build contains: the CPU backend always; in the CUDA build, everything
// cuda/cuda-registration.cc registers (the "cuda" backend, the nccl and peer device
// planes, the peer and nccl expert-parallel exchanges). The testing addon adds its
// "cpu-graphs" backend when it loads. A lookup that finds nothing returns null, and the
// caller says which build has it.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm/deadline.h"
#include "core/backend-options.h"
#include "runtime/connectors.h"

namespace afd {

class Backend;
class EpDeviceExchange;
struct DevicePlaneExchange;
struct DevicePlaneOptions;
struct EpDeviceShape;
namespace comm {
class DataPlane;
class EpMesh;
}  // namespace comm

class Registry {
 public:
  using BackendFactory = std::unique_ptr<Backend> (*)(const BackendOptions& options);
  // Bootstraps over `exchange` and builds the plane on the backend's device and stream
  // (runtime/afd/device-plane.h buildDevicePlane says what each argument is).
  using DevicePlaneFactory = std::unique_ptr<comm::DataPlane> (*)(Backend& backend, bool ffnRole, int numPeers,
                                                                  const DevicePlaneOptions& options,
                                                                  const DevicePlaneExchange& exchange,
                                                                  const std::string& peerName);
  // Bootstraps over the group's mesh and builds the exchange (ep/device-exchange.h).
  using EpExchangeFactory = std::unique_ptr<EpDeviceExchange> (*)(Backend& backend, const EpDeviceShape& shape,
                                                                  comm::EpMesh& mesh, comm::StopFlag stop);

  // A second registration of one name or kind replaces the first.
  void addBackend(const std::string& name, BackendFactory factory);
  void addDevicePlane(ConnectorKind kind, DevicePlaneFactory factory);
  void addEpExchange(EpTransport transport, EpExchangeFactory factory);

  // Null when this build has none.
  BackendFactory backend(const std::string& name) const;
  DevicePlaneFactory devicePlane(ConnectorKind kind) const;
  EpExchangeFactory epExchange(EpTransport transport) const;
  // Registered backend names, in registration order ("cpu" first).
  std::vector<std::string> backendNames() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, BackendFactory>> backends_;
  std::map<ConnectorKind, DevicePlaneFactory> devicePlanes_;
  std::map<EpTransport, EpExchangeFactory> epExchanges_;
};

// The process's registry (one per addon binary), filled with this build's factories on first use.
Registry& registry();

// Builds the backend options.name names (options.threads for the CPU, options.deviceIndex
// and options.cuda for CUDA). Throws naming the compiled backends when there is none.
std::unique_ptr<Backend> createBackend(const BackendOptions& options);

// One connector as this addon sees it: the facts of runtime/connectors.h, and whether this
// build can build its data plane (tcp always; nccl and peer in the CUDA build).
struct ConnectorEntry {
  TransportFacts facts;
  bool available = false;
};
std::vector<ConnectorEntry> connectorEntries();

#ifdef AFD_WITH_CUDA
// Implemented in cuda/cuda-registration.cc: registers the CUDA build's factories.
void registerCudaFactories(Registry& registry);
#endif

}  // namespace afd
