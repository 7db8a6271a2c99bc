// The CPU backend's SharedRegion: a file mapped MAP_SHARED. The owner creates
// `<dir>/afd-kv-<pid>-XXXXXX` (removing files of that name pattern whose process is gone,
// left by a rank that was killed), sizes it and maps it; the handle is the path. A peer
// opens the path and maps the same pages. The owner removes the file when it is destroyed.
#pragma once
#include <memory>
#include <string>

#include "core/shared-region.h"

namespace afd {

std::unique_ptr<SharedRegion> createSharedFileRegion(size_t bytes, const std::string& dir);
std::unique_ptr<SharedRegion> openSharedFileRegion(const std::vector<uint8_t>& handle, size_t bytes);

}  // namespace afd
