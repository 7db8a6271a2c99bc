// Error checks for CUDA runtime calls and kernel launches: every failure becomes a
// std::runtime_error that names the call, the place and CUDA's reason.
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace afd::cuda {

[[noreturn]] inline void throwCudaError(cudaError_t status, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string("CUDA error in ") + what + " (" + file + ":" + std::to_string(line) +
                           "): " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace afd::cuda

#define AFD_CUDA_CHECK(expr)                                                   \
  do {                                                                         \
    const cudaError_t afdStatus_ = (expr);                                     \
    if (afdStatus_ != cudaSuccess) {                                           \
      cudaGetLastError();                                                      \
      ::afd::cuda::throwCudaError(afdStatus_, #expr, __FILE__, __LINE__);      \
    }                                                                          \
  } while (0)

// After a <<<...>>> launch: configuration errors surface here, not at the next sync.
#define AFD_CUDA_CHECK_LAUNCH(name)                                            \
  do {                                                                         \
    const cudaError_t afdStatus_ = cudaGetLastError();                         \
    if (afdStatus_ != cudaSuccess) ::afd::cuda::throwCudaError(afdStatus_, name, __FILE__, __LINE__); \
  } while (0)
