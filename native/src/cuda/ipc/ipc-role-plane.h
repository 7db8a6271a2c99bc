// The role processes' peer-memory data plane (connector "peer"), the registry's factory
// for it (cuda/cuda-registration.cc; runtime/afd/device-plane.h says what the arguments are).
#pragma once
#include <memory>
#include <string>

#include "comm/data-plane.h"
#include "core/backend.h"
#include "runtime/afd/device-plane.h"

namespace afd::cuda {

std::unique_ptr<comm::DataPlane> buildIpcRolePlane(Backend& backend, bool ffnRole, int numPeers,
                                                    const DevicePlaneOptions& options, const DevicePlaneExchange& exchange,
                                                    const std::string& peerName);

}  // namespace afd::cuda
