// Kernel launches with programmatic dependent launch (PDL, sm_90): a kernel may be
// scheduled while its predecessor's last blocks drain, and waits in pdlWait() before it
// touches the predecessor's results. Every kernel launched through launchKernel() must
// call pdlWait() before reading any input. The debugging override AFD_CUDA_PDL=0
// (core/debug-env.h) turns PDL off for the whole process (plain launches).
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "core/debug-env.h"

namespace afd::cuda {

// Waits for the predecessor grid (its writes are visible afterwards), then lets the
// successor grid launch: its blocks are scheduled once every block of this grid has
// started, and they wait here in turn, so kernel launch latency overlaps execution.
__device__ __forceinline__ void pdlWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

inline bool pdlEnabled() {
  static const bool enabled = !debugEnv().pdlOff;
  return enabled;
}

template <typename... KernelArgs, typename... Args>
cudaError_t launchKernel(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream,
                         Args&&... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = pdlEnabled() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace afd::cuda
