// The CUDA backend's SharedRegion: device memory from cudaMalloc (the stream-ordered pool's
// allocations cannot be exported this way) and its 64-byte CUDA IPC handle; a peer process
// on the same host maps it with cudaIpcOpenMemHandle (peer access enabled where the GPUs
// differ), and its copyDevice reads it like its own memory.
#pragma once
#include <memory>

#include "core/shared-region.h"

namespace afd::cuda {

std::unique_ptr<SharedRegion> createIpcRegion(size_t bytes);
std::unique_ptr<SharedRegion> openIpcRegion(const std::vector<uint8_t>& handle, size_t bytes);

}  // namespace afd::cuda
