#include "runtime/registry.h"

#include <sstream>

#include "core/error.h"
#include "cpu/cpu-backend.h"

namespace afd {

namespace {
std::unique_ptr<Backend> createCpuBackend(const BackendOptions& options) { return std::make_unique<CpuBackend>(options.threads); }

Registry& filledRegistry() {
  static Registry r;
  r.addBackend("cpu", createCpuBackend);
#ifdef AFD_WITH_CUDA
  registerCudaFactories(r);
#endif
  return r;
}
}  // namespace

Registry& registry() {
  static Registry& r = filledRegistry();
  return r;
}

void Registry::addBackend(const std::string& name, BackendFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& entry : backends_) {
    if (entry.first == name) {
      entry.second = factory;
      return;
    }
  }
  backends_.emplace_back(name, factory);
}

void Registry::addDevicePlane(ConnectorKind kind, DevicePlaneFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  devicePlanes_[kind] = factory;
}

void Registry::addEpExchange(EpTransport transport, EpExchangeFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  epExchanges_[transport] = factory;
}

Registry::BackendFactory Registry::backend(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& entry : backends_) {
    if (entry.first == name) return entry.second;
  }
  return nullptr;
}

Registry::DevicePlaneFactory Registry::devicePlane(ConnectorKind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devicePlanes_.find(kind);
  return it == devicePlanes_.end() ? nullptr : it->second;
}

Registry::EpExchangeFactory Registry::epExchange(EpTransport transport) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = epExchanges_.find(transport);
  return it == epExchanges_.end() ? nullptr : it->second;
}

std::vector<std::string> Registry::backendNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& entry : backends_) names.push_back(entry.first);
  return names;
}

std::unique_ptr<Backend> createBackend(const BackendOptions& options) {
  if (Registry::BackendFactory factory = registry().backend(options.name)) return factory(options);
  std::ostringstream compiled;
  for (const std::string& name : registry().backendNames()) compiled << (compiled.tellp() > 0 ? ", " : "") << name;
  AFD_CHECK(options.name != "cuda", "backend \"cuda\" is not available in this build (compiled: "
                                        << compiled.str() << "); rebuild the addon with AFD_CUDA=on on a machine with nvcc");
  AFD_FAIL("unknown backend \"" << options.name << "\" (compiled: " << compiled.str() << ")");
}

std::vector<ConnectorEntry> connectorEntries() {
  std::vector<ConnectorEntry> out;
  for (ConnectorKind kind : kConnectorKinds) {
    out.push_back({factsOf(kind), !movesDeviceMemory(kind) || registry().devicePlane(kind) != nullptr});
  }
  return out;
}

}  // namespace afd
