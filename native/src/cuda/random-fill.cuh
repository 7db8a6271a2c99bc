// Deterministic random fill of device memory (synthetic weights generated on the GPU,
// so a full-size model never touches the disk): value i = offset + scale * (2u - 1),
// u = uniform(seed, i) in [0, 1).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace afd::cuda {

// dtype: afd::DType code (0 f32, 1 f16, 2 bf16).
void fillRandom(void* data, int dtype, size_t count, uint64_t seed, float scale, float offset, cudaStream_t stream);

}  // namespace afd::cuda
