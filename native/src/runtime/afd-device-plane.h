// Device data planes for the role processes: the TCP connector keeps the handshake and
// the control plane, while hidden states and FFN outputs move device to device. Today:
// "nccl", one two-rank communicator per attention <-> FFN pair (FFN = rank 0), so two
// attention ranks of one block may share a GPU (NCCL refuses two ranks of one
// communicator on one device). The FFN rank makes one bootstrap blob (NCCL unique id)
// per peer and sends it over the TCP link; both sides then build their plane.
// Implemented by the CUDA build (cuda/nccl/nccl-role-plane.cc); CPU-only builds refuse
// with a clear message.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/data-plane.h"
#include "core/backend.h"

namespace afd {

// True for connectors that move device memory ("nccl"); false for "tcp". Throws on an unknown name.
bool isDeviceConnector(const std::string& connector);

// FFN side: a fresh bootstrap blob for one attention peer.
std::vector<uint8_t> makeDevicePlaneBootstrap(const std::string& connector);

// Builds the plane on the engine's backend (its device and stream). ffnRole: blobs has
// one entry per attention peer of the block; attention: exactly one (from its FFN rank).
// Blocks until every peer has joined its communicator. peerName names the other side.
std::unique_ptr<comm::DataPlane> createDevicePlane(const std::string& connector, Backend& backend, bool ffnRole,
                                                   const std::vector<std::vector<uint8_t>>& blobs, int stepDeadlineMs,
                                                   const std::string& peerName);

}  // namespace afd
