// How an attention or FFN role joins its topology over the TCP connector: the user's
// options plus the model shape both sides check at rendezvous.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "comm/rendezvous.h"
#include "comm/topology.h"
#include "model/model-config.h"
#include "runtime/afd/device-plane.h"
#include "runtime/connectors.h"

namespace afd {

struct AfdConnectorOptions {
  /** Rank counts of both roles (resolved in TypeScript; validated again here). Default 1A1F. */
  comm::AfdTopology topology;
  /** Rank within the role. */
  int rank = 0;
  /** Host of each FFN rank; empty = every FFN rank at `host`. */
  std::vector<std::string> ffnHosts;
  /** Default FFN host when ffnHosts is empty. */
  std::string host = "127.0.0.1";
  /** FFN rank f listens on basePort + f. */
  int basePort = 29500;
  /** FFN only: bind address; empty = its own entry of ffnHosts. */
  std::string listenHost;
  /** A peer silent this long inside a step fails the step, naming the peer. */
  int stepDeadlineMs = 5000;
  /** Data plane: tcp (host memory over the TCP link), nccl (device memory; CUDA backend; any hosts) or peer (device memory through CUDA IPC; GPUs of one host). The TCP link always carries handshake and control. */
  ConnectorKind connector = ConnectorKind::Tcp;
  /** How long rendezvous waits; 0 = forever. */
  int rendezvousTimeoutMs = 300000;
  /** Most tokens an attention rank sends per step (the scheduler's max-num-batched-tokens); sizes the peer-memory inboxes. */
  int maxStepTokens = 2048;
  /** Identity of this start of the topology: every rank of one start passes the same ("" = started by hand). */
  std::string rendezvousId;
  /** FFN role: static expert parallelism over the FFN ranks (ep/ffn-group.h); no effect with one FFN rank. */
  bool expertParallel = false;
  /** FFN role, expert parallelism: what carries the group's exchange. "tcp": host memory over the group's TCP mesh (any hosts; the FFN step runs eagerly on CUDA); "peer": device memory through CUDA IPC (CUDA, FFN ranks of one host; the step stays a CUDA graph; ep/device-exchange.h); "nccl": device memory over an NCCL communicator of the group (CUDA, a GPU per FFN rank, any hosts; the step stays a CUDA graph); unset ("auto"): peer under connector peer with every FFN rank on one host, nccl under connector nccl, else tcp. */
  std::optional<EpTransport> epTransport;
  /** FFN role: capture the whole step as a CUDA graph when the attention rank asks (device connectors; ffn-step-graphs.h); false serves every step eagerly. */
  bool ffnGraphs = true;
  /** FFN role, fault tests only (the debugging override AFD_FAULT_FFN_LAYER_DELAY_US): a host pause of this many microseconds before each eagerly served layer. */
  int faultLayerDelayUs = 0;
};

// The connector config for an engine's model and role options. Throws CommError(kConfig).
// activation: the engine backend's activation dtype (what crosses the wire).
comm::RendezvousConfig makeConnectorConfig(const AfdConnectorOptions& options, const ModelConfig& model,
                                             bool gateOnAttention, DType activation);
// The device plane's options for a connector config (shape, deadline) and maxStepTokens.
DevicePlaneOptions devicePlaneOptions(const comm::RendezvousConfig& config, int maxStepTokens);

}  // namespace afd
