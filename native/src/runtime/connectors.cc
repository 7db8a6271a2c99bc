#include "runtime/connectors.h"

namespace afd {

namespace {
// tcp: host buffers over the rank's TCP link, any hosts, eager steps only (the FFN step
// graph and the attention side's graphSafe() need a device wire). nccl: device buffers,
// an NCCL communicator per pair, any hosts. peer: device buffers through CUDA IPC, so
// GPUs of one host.
constexpr TransportFacts kTcp{"tcp", MemoryKind::Host, false, false, false};
constexpr TransportFacts kNccl{"nccl", MemoryKind::Device, false, true, true};
constexpr TransportFacts kPeer{"peer", MemoryKind::Device, true, true, true};
}  // namespace

const TransportFacts& factsOf(ConnectorKind kind) {
  switch (kind) {
    case ConnectorKind::Tcp: return kTcp;
    case ConnectorKind::Nccl: return kNccl;
    case ConnectorKind::Peer: return kPeer;
  }
  return kTcp;
}

// The expert-parallel transports share the facts of the connector of the same name: tcp
// runs the group's exchange on the host (the FFN step stays eager), peer and nccl on the
// engine's stream (the step stays a graph).
const TransportFacts& factsOf(EpTransport transport) {
  switch (transport) {
    case EpTransport::Tcp: return kTcp;
    case EpTransport::Peer: return kPeer;
    case EpTransport::Nccl: return kNccl;
  }
  return kTcp;
}

}  // namespace afd
