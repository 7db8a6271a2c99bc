// What this build can do and what the machine offers at run time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace afd {

struct DeviceInfo {
  int index = 0;
  std::string name;
  uint64_t totalMemoryBytes = 0;
  uint64_t freeMemoryBytes = 0;
  int computeMajor = 0;
  int computeMinor = 0;
  int multiProcessors = 0;
};

struct LibraryInfo {
  bool loaded = false;
  std::string soname;   // the name that loaded
  std::string version;  // e.g. "13.0.0" or "2.28.3"
  std::string error;    // why it did not load
};

struct ProbeResult {
  std::string version;              // addon version
  std::string variant;              // "cpu" or "cuda" (the backends: runtime/registry.h)
  int cudaRuntimeVersion = 0;       // 0 when not compiled with CUDA
  int cudaDriverVersion = 0;        // 0 when no driver
  std::string cudaError;            // why no device is visible, if none
  std::vector<DeviceInfo> devices;
  LibraryInfo cublas;
  LibraryInfo cublasLt;
  LibraryInfo nccl;
};

ProbeResult probe();

#ifdef AFD_WITH_CUDA
// Implemented in cuda/cuda-probe.cc.
void probeCuda(ProbeResult& out);
#endif

}  // namespace afd
