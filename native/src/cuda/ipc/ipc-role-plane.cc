// The role processes' peer-memory data plane (runtime/afd/device-plane.h, connector
// "peer"): bootstrap both ways over the TCP links, then a IpcDataPlane on the CUDA
// backend's device and stream.
//   F->A kBootstrap:      the FFN rank's IpcBootstrap for this pair (inbox sizes, handle).
//   A->F kBootstrapReply: the attention rank's IpcBootstrap (same sizes, its handle).
// Each side maps the other's inboxes (cudaIpcOpenMemHandle); both ranks must be on one host.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm-error.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/host-name.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/device-planes.h"
#include "cuda/ipc/ipc-data-plane.h"
#include "runtime/afd/device-plane.h"

namespace afd::cuda {

namespace {

constexpr char kIpcBootstrapMagic[8] = {'A', 'F', 'D', 'P', 'E', 'E', 'R', '1'};
constexpr size_t kControlInboxBytes = 256;  // the control payload stays on TCP: minimal

// One side's half of a peer-memory pair (fixed layout; both sides run the same build).
struct IpcBootstrap {
  /** kIpcBootstrapMagic: tells a peer blob from an NCCL unique id. */
  char magic[8];
  /** CUDA device index of the sender (for messages). */
  int32_t device = 0;
  /** Sender's process id (for messages). */
  int32_t pid = 0;
  /** Bytes of one stage inbox slot (the FFN rank decides; the reply repeats it). */
  uint64_t stageInboxBytes = 0;
  /** Bytes of one control inbox slot. */
  uint64_t controlInboxBytes = 0;
  /** Sender's host name, NUL-terminated (peer memory needs one host). */
  char host[64];
  /** CUDA IPC handle of the sender's inbox + flag region. */
  cudaIpcMemHandle_t handle;
};

std::vector<uint8_t> encode(const cuda::IpcWire& wire, int device) {
  IpcBootstrap b{};
  std::memcpy(b.magic, kIpcBootstrapMagic, sizeof b.magic);
  b.device = device;
  b.pid = static_cast<int32_t>(getpid());
  b.stageInboxBytes = wire.inboxBytes(0);
  b.controlInboxBytes = wire.inboxBytes(cuda::kControlChannel);
  const std::string h = hostName();
  std::memcpy(b.host, h.data(), std::min(h.size(), sizeof b.host - 1));
  b.handle = wire.exportHandle();
  std::vector<uint8_t> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

IpcBootstrap decode(const std::vector<uint8_t>& blob, const std::string& from) {
  IpcBootstrap b{};
  if (blob.size() != sizeof b || std::memcmp(blob.data(), kIpcBootstrapMagic, sizeof b.magic) != 0) {
    throw comm::CommError(comm::CommErrorKind::kProtocol,
                          from + " sent a " + std::to_string(blob.size()) + "-byte bootstrap that is not a peer-memory handle " +
                              "(expected " + std::to_string(sizeof b) + " bytes" +
                              (blob.size() == 128 ? "; 128 bytes is an NCCL unique id: that side runs connector nccl" : "") +
                              "); run both roles with the same --connector and the same build");
  }
  std::memcpy(&b, blob.data(), sizeof b);
  b.host[sizeof b.host - 1] = '\0';
  const std::string mine = hostName();
  if (mine != b.host) {
    throw comm::CommError(comm::CommErrorKind::kConfig, std::string("connector peer needs both ranks on one host: ") + from +
                                                            " runs on " + b.host + ", this rank on " + mine +
                                                            "; use connector nccl across hosts");
  }
  return b;
}

}  // namespace

std::unique_ptr<comm::DataPlane> buildIpcRolePlane(Backend& backend, bool ffnRole, int numPeers,
                                                    const DevicePlaneOptions& o, const DevicePlaneExchange& exchange,
                                                    const std::string& peerName) {
  auto* cudaBackend = dynamic_cast<cuda::CudaBackend*>(&backend);
  AFD_CHECK(cudaBackend != nullptr, "connector \"peer\" needs the CUDA backend (this engine runs on " << backend.name() << ")");
  AFD_CHECK(o.hiddenSize > 0 && o.maxStepTokens > 0, "peer-memory plane: hidden size and maxStepTokens must be positive");
  // The calling thread (rendezvous / watcher) must target the engine's device.
  const int device = backend.device().index;
  AFD_CUDA_CHECK(cudaSetDevice(device));
  std::vector<std::unique_ptr<cuda::IpcWire>> wires;
  std::string limit;
  if (ffnRole) {
    // Largest message: one stage of one peer, [maxStepTokens, max(H, E)] f32.
    const size_t width = std::max<uint32_t>(o.hiddenSize, o.numExperts);
    const size_t stageBytes = static_cast<size_t>(o.maxStepTokens) * width * sizeof(float);
    limit = std::to_string(o.maxStepTokens) + " tokens x " + std::to_string(width) + " floats: this FFN rank's step "
            "token budget, the larger of --max-num-batched-tokens and the largest CUDA graph bucket";
    for (int p = 0; p < numPeers; ++p) {
      const std::string who = "attention peer " + std::to_string(p) + " of " + peerName;
      wires.push_back(std::make_unique<cuda::IpcWire>(stageBytes, kControlInboxBytes, o.stepDeadlineMs, who));
      exchange.send(p, encode(*wires.back(), device));
    }
    for (int p = 0; p < numPeers; ++p) {
      const IpcBootstrap r = decode(exchange.recv(p), wires[p]->peer());
      if (r.stageInboxBytes != wires[p]->inboxBytes(0) || r.controlInboxBytes != wires[p]->inboxBytes(cuda::kControlChannel)) {
        throw comm::CommError(comm::CommErrorKind::kProtocol, wires[p]->peer() + " replied with inbox sizes " +
                                                                  std::to_string(r.stageInboxBytes) + "/" +
                                                                  std::to_string(r.controlInboxBytes) + " bytes, not this rank's; "
                                                                  "run both roles with the same build");
      }
      wires[p]->connect(r.handle);
    }
  } else {
    const IpcBootstrap f = decode(exchange.recv(0), peerName);
    limit = "set by " + peerName + " (device " + std::to_string(f.device) + ", pid " + std::to_string(f.pid) + ")";
    wires.push_back(std::make_unique<cuda::IpcWire>(f.stageInboxBytes, f.controlInboxBytes, o.stepDeadlineMs, peerName));
    AFD_CHECK(wires[0]->inboxBytes(0) == f.stageInboxBytes, "peer-memory plane: inbox size " << f.stageInboxBytes << " from " << peerName << " is not 256-byte aligned");
    wires[0]->connect(f.handle);
    exchange.send(0, encode(*wires[0], device));
  }
  return std::make_unique<cuda::IpcDataPlane>(std::move(wires), ffnRole, o.stepDeadlineMs, cudaBackend->stream(), limit);
}

}  // namespace afd::cuda
