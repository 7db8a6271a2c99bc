#include "core/probe.h"

#ifndef AFD_VERSION
#define AFD_VERSION "0.0.0"
#endif

namespace afd {

ProbeResult probe() {
  ProbeResult out;
  out.version = AFD_VERSION;
#ifdef AFD_WITH_CUDA
  out.variant = "cuda";
  probeCuda(out);
#else
  out.variant = "cpu";
  const char* notBuilt = "this addon was built without CUDA (AFD_CUDA=off or no nvcc at build time)";
  out.cublas.error = notBuilt;
  out.cublasLt.error = notBuilt;
  out.nccl.error = notBuilt;
  out.cudaError = notBuilt;
#endif
  return out;
}

}  // namespace afd
