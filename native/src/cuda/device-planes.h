// The role processes' device data planes the CUDA build registers (cuda/cuda-registration.cc;
// runtime/afd/device-plane.h says what the arguments are): connector "nccl" (one NCCL
// communicator per attention <-> FFN pair, cuda/nccl/nccl-role-plane.cc) and connector
// "peer" (CUDA IPC memory of GPUs on one host, cuda/ipc/ipc-role-plane.cc).
#pragma once
#include <memory>
#include <string>

#include "comm/data-plane.h"
#include "core/backend.h"
#include "runtime/afd/device-plane.h"

namespace afd::cuda {

std::unique_ptr<comm::DataPlane> buildNcclRolePlane(Backend& backend, bool ffnRole, int numPeers,
                                                    const DevicePlaneOptions& options, const DevicePlaneExchange& exchange,
                                                    const std::string& peerName);
std::unique_ptr<comm::DataPlane> buildIpcRolePlane(Backend& backend, bool ffnRole, int numPeers,
                                                   const DevicePlaneOptions& options, const DevicePlaneExchange& exchange,
                                                   const std::string& peerName);

}  // namespace afd::cuda
