// Device data planes for the role processes: the TCP connector keeps the handshake and
// the control plane, while hidden states and FFN outputs move device to device.
//  - "nccl": one two-rank communicator per attention <-> FFN pair (FFN = rank 0), so two
//    attention ranks of one block may share a GPU (NCCL refuses two ranks of one
//    communicator on one device); works across hosts. Bootstrap one way: the FFN rank
//    sends each peer an NCCL unique id.
//  - "peer": GPUs of one host through CUDA IPC peer memory (cuda/ipc/ipc-data-plane.h).
//    Bootstrap both ways: the FFN rank sends each peer its inbox handle (+ sizes), the
//    attention rank maps it and replies with its own handle, which the FFN rank maps.
// The CUDA build registers both (runtime/registry.h; cuda/nccl/nccl-role-plane.cc,
// cuda/ipc/ipc-role-plane.cc); a CPU-only build has neither and refuses with a clear message.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/data-plane.h"
#include "core/backend.h"
#include "runtime/connectors.h"

namespace afd {

// Throws when `connector` moves device memory but the `role` engine's backend runs on the
// host (a device plane needs --backend cuda).
void requireConnectorBackend(ConnectorKind connector, const Backend& backend, const char* role);

// The TCP side channel a bootstrap travels on (the role's connector links).
struct DevicePlaneExchange {
  // FFN: the bootstrap blob to attention peer p; attention: the reply to the FFN rank (p = 0).
  std::function<void(int peer, const std::vector<uint8_t>& blob)> send;
  // FFN: peer p's reply; attention: the FFN rank's bootstrap blob (p = 0).
  std::function<std::vector<uint8_t>(int peer)> recv;
};

struct DevicePlaneOptions {
  /** A peer silent this long inside a step fails the step. */
  int stepDeadlineMs = 5000;
  /** Most tokens one rank sends in one step and stage (sizes the peer-memory inboxes). */
  int maxStepTokens = 2048;
  /** Hidden size H and routed experts E (messages are [rows, H] / [rows, E] f32). */
  uint32_t hiddenSize = 0, numExperts = 0;
};

// Bootstraps and builds the plane on the engine's backend (its device and stream).
// ffnRole: numPeers = the block's attention ranks; attention: numPeers = 1 (its FFN rank).
// Blocks until every peer has joined. peerName names the other side (errors).
std::unique_ptr<comm::DataPlane> buildDevicePlane(ConnectorKind connector, Backend& backend, bool ffnRole,
                                                  int numPeers, const DevicePlaneOptions& options,
                                                  const DevicePlaneExchange& exchange, const std::string& peerName);

}  // namespace afd
