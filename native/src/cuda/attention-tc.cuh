// Tensor-core paged attention (bf16 KV cache): host entry points used by pagedAttention's
// dispatch (attention.cu). Kernels: attention-tc-decode.cu, attention-tc-prefill.cu;
// warp-level pieces: attention-mma.cuh.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "cuda/attention.cuh"
#include "cuda/cuda-check.h"

namespace afd::cuda {

inline constexpr int kTensorCoreMaxGroup = 16;  // q heads per kv head: one m16 row tile in decode

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
