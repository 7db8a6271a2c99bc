// Where the FFN ranks of an expert-parallel group run, for transports that need a GPU
// per rank (epTransport nccl: NCCL refuses two ranks of one communicator on one GPU).
#pragma once
#include <string>
#include <vector>

namespace afd {

struct EpRankGpu {
  std::string host;  // host name of the rank's machine
  std::string gpu;   // the GPU's PCI bus id (unique within a host)
};

// Empty when every rank has a GPU of its own; otherwise the first clash, as
// "FFN ranks a and b both use GPU <gpu> of host <host>".
std::string sharedGpuConflict(const std::vector<EpRankGpu>& ranks);

}  // namespace afd
