// The connectors an AFD rank joins its topology with (the data plane between attention
// and FFN ranks; the TCP link always carries handshake and control) and the transports of
// an FFN group's expert-parallel exchange, as enums with the facts the TypeScript side
// keeps in its table (shared/src/config/connectors.ts): the addon's connectors() lists
// these so a test can compare the two. Option strings become these enums in one place,
// the binding's conversion of options (binding/afd-binding.cc).
#pragma once
#include <array>

namespace afd {

// Data plane of the attention <-> FFN link: "tcp", "nccl" or "peer" (CUDA IPC).
enum class ConnectorKind { Tcp, Nccl, Peer };
// What carries an FFN group's expert-parallel exchange: "tcp", "peer" (CUDA IPC) or "nccl".
enum class EpTransport { Tcp, Peer, Nccl };

enum class MemoryKind { Host, Device };

struct TransportFacts {
  const char* name;      // the option value, e.g. "peer"
  MemoryKind memory;     // what it moves: host buffers or device buffers
  bool oneHostOnly;      // every rank it links must be on one host (CUDA IPC)
  bool needsCuda;        // needs the CUDA build of the addon and the CUDA backend
  bool graphCapturable;  // a step over it can be captured and replayed as a CUDA graph
};

// In the order the option errors list them.
constexpr std::array<ConnectorKind, 3> kConnectorKinds{ConnectorKind::Tcp, ConnectorKind::Nccl, ConnectorKind::Peer};
constexpr std::array<EpTransport, 3> kEpTransports{EpTransport::Tcp, EpTransport::Peer, EpTransport::Nccl};

const TransportFacts& factsOf(ConnectorKind kind);
const TransportFacts& factsOf(EpTransport transport);
inline const char* nameOf(ConnectorKind kind) { return factsOf(kind).name; }
inline const char* nameOf(EpTransport transport) { return factsOf(transport).name; }
// True for connectors and transports that move device memory (nccl, peer).
inline bool movesDeviceMemory(ConnectorKind kind) { return factsOf(kind).memory == MemoryKind::Device; }
inline bool movesDeviceMemory(EpTransport transport) { return factsOf(transport).memory == MemoryKind::Device; }

}  // namespace afd
