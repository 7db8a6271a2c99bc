#include "runtime/afd/connector-options.h"

namespace afd {

comm::RendezvousConfig makeConnectorConfig(const AfdConnectorOptions& o, const ModelConfig& model,
                                             bool gateOnAttention, DType activation) {
  comm::RendezvousConfig c;
  c.topology = o.topology;
  c.topology.validate();
  c.rank = o.rank;
  c.ffnHosts = o.ffnHosts.empty() ? std::vector<std::string>(c.topology.numFfn, o.host) : o.ffnHosts;
  c.basePort = o.basePort;
  c.listenHost = o.listenHost;
  c.stepDeadlineMs = o.stepDeadlineMs;
  c.rendezvousTimeoutMs = o.rendezvousTimeoutMs;
  c.rendezvousId = o.rendezvousId;
  c.model.numLayers = static_cast<uint32_t>(model.numLayers);
  c.model.hiddenSize = static_cast<uint32_t>(model.hiddenSize);
  c.model.activationBytes = static_cast<uint32_t>(dtypeBytes(activation));
  c.model.numExperts = static_cast<uint32_t>(model.numExperts);
  c.model.gateOnAttention = gateOnAttention && model.numExperts > 0;
  // The wire's view of the layer kinds: which layers route (and may carry router logits).
  c.model.moeLayers.assign(model.numLayers, false);
  for (int l = 0; l < model.numLayers && l < static_cast<int>(model.layers.size()); ++l) c.model.moeLayers[l] = model.isMoeLayer(l);
  return c;
}

DevicePlaneOptions devicePlaneOptions(const comm::RendezvousConfig& config, int maxStepTokens) {
  DevicePlaneOptions o;
  o.stepDeadlineMs = config.stepDeadlineMs;
  o.maxStepTokens = maxStepTokens;
  o.hiddenSize = config.model.hiddenSize;
  o.numExperts = config.model.numExperts;
  return o;
}

}  // namespace afd
