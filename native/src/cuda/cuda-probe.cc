// Device and library discovery for probe(). Never throws: every failure becomes text.
#include <cuda_runtime.h>

#include "core/probe.h"
#include "cuda/libraries.h"

namespace afd {
namespace {

std::string dottedVersion(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// Each library's version through its own symbol; "" when the symbol is missing.
std::string cublasVersion(const DynLib& lib) {
  // cublasStatus_t cublasGetProperty(libraryPropertyType, int*); MAJOR=0, MINOR=1, PATCH=2.
  using GetProperty = int (*)(int, int*);
  auto getProperty = lib.symbol<GetProperty>("cublasGetProperty");
  if (getProperty == nullptr) return "";
  int parts[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) getProperty(i, &parts[i]);
  return dottedVersion(parts[0], parts[1], parts[2]);
}

std::string cublasLtVersion(const DynLib& lib) {
  using GetVersion = size_t (*)();
  auto getVersion = lib.symbol<GetVersion>("cublasLtGetVersion");
  if (getVersion == nullptr) return "";
  const size_t v = getVersion();  // major*10000 + minor*100 + patch
  return dottedVersion(static_cast<int>(v / 10000), static_cast<int>((v / 100) % 100), static_cast<int>(v % 100));
}

std::string ncclVersion(const DynLib& lib) {
  using GetVersion = int (*)(int*);
  auto getVersion = lib.symbol<GetVersion>("ncclGetVersion");
  int code = 0;
  if (getVersion == nullptr || getVersion(&code) != 0) return "";
  // Since NCCL 2.9: major*10000 + minor*100 + patch.
  return dottedVersion(code / 10000, (code / 100) % 100, code % 100);
}

// Whether `lib` loaded, under which name and version, or why it did not.
void probeLibrary(LibraryInfo& info, const DynLib& lib, std::string (*versionOf)(const DynLib&)) {
  if (!lib.ok()) {
    info.error = lib.error();
    return;
  }
  info.loaded = true;
  info.soname = lib.loadedName();
  info.version = versionOf(lib);
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
    probeLibrary(out.cublas, cuda::cublasLibrary(), cublasVersion);
    probeLibrary(out.cublasLt, cuda::cublasLtLibrary(), cublasLtVersion);
    probeLibrary(out.nccl, cuda::ncclLibrary(), ncclVersion);
  } else {
    const std::string why = "not probed: " + out.cudaError;
    out.cublas.error = why;
    out.cublasLt.error = why;
    out.nccl.error = why;
  }
}

}  // namespace afd
