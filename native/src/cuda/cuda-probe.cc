// Device and library discovery for probe(). Never throws: every failure becomes text.
#include <cuda_runtime.h>

#include "core/probe.h"
#include "cuda/libraries.h"

namespace afd {
namespace {

std::string dottedVersion(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void probeCublas(LibraryInfo& info) {
  const DynLib& lib = cuda::cublasLibrary();
  if (!lib.ok()) {
    info.error = lib.error();
    return;
  }
  info.loaded = true;
  info.soname = lib.loadedName();
  // cublasStatus_t cublasGetProperty(libraryPropertyType, int*); MAJOR=0, MINOR=1, PATCH=2.
  using GetProperty = int (*)(int, int*);
  auto getProperty = lib.symbol<GetProperty>("cublasGetProperty");
  int parts[3] = {0, 0, 0};
  if (getProperty != nullptr) {
    for (int i = 0; i < 3; ++i) getProperty(i, &parts[i]);
    info.version = dottedVersion(parts[0], parts[1], parts[2]);
  }
}

void probeCublasLt(LibraryInfo& info) {
  const DynLib& lib = cuda::cublasLtLibrary();
  if (!lib.ok()) {
    info.error = lib.error();
    return;
  }
  info.loaded = true;
  info.soname = lib.loadedName();
  using GetVersion = size_t (*)();
  auto getVersion = lib.symbol<GetVersion>("cublasLtGetVersion");
  if (getVersion != nullptr) {
    const size_t v = getVersion();  // major*10000 + minor*100 + patch
    info.version = dottedVersion(static_cast<int>(v / 10000), static_cast<int>((v / 100) % 100), static_cast<int>(v % 100));
  }
}

void probeNccl(LibraryInfo& info) {
  const DynLib& lib = cuda::ncclLibrary();
  if (!lib.ok()) {
    info.error = lib.error();
    return;
  }
  info.loaded = true;
  info.soname = lib.loadedName();
  using GetVersion = int (*)(int*);
  auto getVersion = lib.symbol<GetVersion>("ncclGetVersion");
  int code = 0;
  if (getVersion != nullptr && getVersion(&code) == 0) {
    // Since NCCL 2.9: major*10000 + minor*100 + patch.
    info.version = dottedVersion(code / 10000, (code / 100) % 100, code % 100);
  }
}

}  // namespace

void probeCuda(ProbeResult& out) {
  cudaRuntimeGetVersion(&out.cudaRuntimeVersion);
  cudaDriverGetVersion(&out.cudaDriverVersion);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    out.cudaError = std::string("no CUDA device visible: ") + cudaGetErrorString(status);
    cudaGetLastError();
    count = 0;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    DeviceInfo dev;
    dev.index = i;
    dev.name = prop.name;
    dev.totalMemoryBytes = prop.totalGlobalMem;
    dev.computeMajor = prop.major;
    dev.computeMinor = prop.minor;
    dev.multiProcessors = prop.multiProcessorCount;
    size_t freeBytes = 0;
    size_t totalBytes = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess) {
      dev.freeMemoryBytes = freeBytes;
    }
    out.devices.push_back(dev);
  }
  if (count > 0) {
    probeCublas(out.cublas);
    probeCublasLt(out.cublasLt);
    probeNccl(out.nccl);
  } else {
    const std::string why = "not probed: " + out.cudaError;
    out.cublas.error = why;
    out.cublasLt.error = why;
    out.nccl.error = why;
  }
}

}  // namespace afd
