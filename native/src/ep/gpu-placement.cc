#include "ep/gpu-placement.h"

namespace afd {

std::string sharedGpuConflict(const std::vector<EpRankGpu>& ranks) {
  for (size_t b = 1; b < ranks.size(); ++b) {
    for (size_t a = 0; a < b; ++a) {
      if (ranks[a].host == ranks[b].host && ranks[a].gpu == ranks[b].gpu) {
        return "FFN ranks " + std::to_string(a) + " and " + std::to_string(b) + " both use GPU " + ranks[b].gpu + " of host " + ranks[b].host;
      }
    }
  }
  return "";
}

}  // namespace afd
