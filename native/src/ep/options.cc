#include "ep/options.h"

#include <algorithm>

namespace afd {

bool expertParallelOn(const AfdConnectorOptions& options, const comm::RendezvousConfig& config) {
  return options.expertParallel && config.topology.numFfn > 1;
}

EpTransport epTransportOf(const AfdConnectorOptions& options, const comm::RendezvousConfig& config) {
  if (options.epTransport) return *options.epTransport;
  const std::vector<std::string>& hosts = config.ffnHosts;
  const bool oneHost = std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == hosts.front(); });
  if (options.connector == ConnectorKind::Peer && oneHost) return EpTransport::Peer;
  return options.connector == ConnectorKind::Nccl ? EpTransport::Nccl : EpTransport::Tcp;
}

comm::EpMeshConfig epMeshConfig(const comm::RendezvousConfig& c, const AfdConnectorOptions& o, const ModelConfig& m) {
  comm::EpMeshConfig e;
  e.numRanks = c.topology.numFfn;
  e.rank = c.rank;
  e.hosts = c.ffnHosts;
  e.basePort = c.basePort + c.topology.numFfn;
  e.listenHost = c.listenHost;
  e.deadlineMs = std::max(1, c.stepDeadlineMs / 2);
  e.rendezvousTimeoutMs = c.rendezvousTimeoutMs;
  e.identity = "topology " + c.topology.name() + ", " + m.arch + " with " + std::to_string(m.numLayers) + " layers, hidden " +
               std::to_string(m.hiddenSize) + ", " + std::to_string(m.numExperts) + " experts top-" +
               std::to_string(m.numExpertsPerTok) + ", gate on " + (c.model.gateOnAttention ? "attention" : "FFN") + ", " +
               std::to_string(c.model.activationBytes) + "-byte activations" +
               ", exchange over " + nameOf(epTransportOf(o, c)) + ", rendezvous id \"" + o.rendezvousId + "\"";
  return e;
}

}  // namespace afd
