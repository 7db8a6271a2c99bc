// Tensor-core paged attention (bf16 KV cache): host entry points used by pagedAttention's
// dispatch (attention.cu). Kernels: attention-tc-decode.cu, attention-tc-prefill.cu;
// warp-level pieces: attention-mma.cuh.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda/attention.cuh"
#include "cuda/cuda-check.h"

namespace afd::cuda {

inline constexpr int kTensorCoreMaxGroup = 16;  // q heads per kv head: one m16 row tile in decode

// The head dims the tensor-core kernels are instantiated for.
inline constexpr bool isTensorCoreHeadDim(int headDim) { return headDim == 64 || headDim == 128 || headDim == 256; }

// Calls f(std::integral_constant<int, D>{}) for headDim D, one of the tensor-core head dims
// (the template argument of the kernel f launches); any other is an error naming `op`.
template <typename F>
void withTensorCoreHeadDim(int headDim, const char* op, F f) {
  switch (headDim) {
    case 64: f(std::integral_constant<int, 64>{}); break;
    case 128: f(std::integral_constant<int, 128>{}); break;
    case 256: f(std::integral_constant<int, 256>{}); break;
    default: throw std::invalid_argument(std::string(op) + ": headDim must be 64, 128 or 256, got " + std::to_string(headDim));
  }
}

// bf16 cache, headDim 64/128/256, group <= kTensorCoreMaxGroup.
bool tensorCoreAttentionFits(const PagedAttentionArgs& a);

// maxQueryLen > 1: the tiled prefill kernel; else the split decode kernel.
void tensorCoreAttention(const PagedAttentionArgs& a, cudaStream_t stream);
void tensorCoreDecode(const PagedAttentionArgs& a, cudaStream_t stream);
void tensorCorePrefill(const PagedAttentionArgs& a, cudaStream_t stream);

// Opts `kernel` into `bytes` of dynamic shared memory (> 48 KB) once per device: the
// attribute is per device, and cudaFuncSetAttribute may wait for in-flight copies, so it
// is not repeated per launch. `doneDevices`: one bit per device index, owned by the caller.
template <typename Kernel>
void allowDynamicShared(Kernel kernel, size_t bytes, std::atomic<uint64_t>& doneDevices) {
  int device = 0;
  AFD_CUDA_CHECK(cudaGetDevice(&device));
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit != 0 && (doneDevices.load(std::memory_order_acquire) & bit) != 0) return;
  AFD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  doneDevices.fetch_or(bit, std::memory_order_release);
}

}  // namespace afd::cuda
