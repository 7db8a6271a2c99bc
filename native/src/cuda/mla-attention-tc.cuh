// Step 2 of MLA attention (the per-chunk partials, mla-attention.cuh) on the tensor cores,
// for DeepSeek V2 / V3's latent rows (kv_lora_rank 512 + rope 64) in a bf16 cache.
#pragma once
#include <cuda_runtime.h>

#include "cuda/mla-attention.cuh"

namespace afd::cuda {

// The shape and dtypes the tensor-core kernel covers; others run on the SIMT kernel.
bool mlaTensorCoreFits(const MlaAttentionArgs& a);

// Writes a.partials exactly as the SIMT kernel's layout (merged by mlaLatentOut).
void mlaTensorCorePartials(const MlaAttentionArgs& a, cudaStream_t stream);

}  // namespace afd::cuda
