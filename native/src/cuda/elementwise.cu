#include "cuda/elementwise.cuh"

#include "core/dummy-weights.h"

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void addKernel(const float* a, const float* b, float* out, int64_t n) {
  pdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

__global__ void addBf16Kernel(const bf16* a, const bf16* b, bf16* out, int64_t n) {
  pdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

__global__ void sigmoidGateKernel(const void* x, const float* gate, void* out, int dtype, int64_t total, int64_t n,
                                  int64_t groups) {
  pdlWait();
  const int64_t group = n / groups;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / n, g = (i % n) / group;
    const float s = 1.0f / (1.0f + expf(-gate[t * groups + g]));
    storeFromFloat(out, dtype, static_cast<size_t>(i), loadAsFloat(x, dtype, static_cast<size_t>(i)) * s);
  }
}

__global__ void addBiasKernel(float* out, const void* bias, int dtype, int n) {
  pdlWait();
  float* row = out + static_cast<size_t>(blockIdx.x) * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] += loadAsFloat(bias, dtype, i);
}

__global__ void fillDummyKernel(void* data, int dtype, size_t count, uint64_t key, float scale, float offset) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    storeFromFloat(data, dtype, i, dummyValue(key, i, scale, offset));
}

__global__ void toBf16Kernel(const float* x, bf16* out, int64_t n) {
  pdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(x[i]);
}
__global__ void splitBf16Kernel(const float* x, bf16* hi, bf16* lo, int64_t n) {
  pdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const bf16 h = __float2bfloat16(x[i]);
    hi[i] = h;
    lo[i] = __float2bfloat16(x[i] - __bfloat162float(h));
  }
}

}  // namespace

void addF32(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads < 4096 ? (n + kThreads - 1) / kThreads : 4096);
  AFD_CUDA_CHECK(launchKernel(addKernel, blocks, kThreads, 0, stream, a, b, out, n));
  AFD_CUDA_CHECK_LAUNCH("addKernel");
}

void addBf16(const void* a, const void* b, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads < 4096 ? (n + kThreads - 1) / kThreads : 4096);
  AFD_CUDA_CHECK(launchKernel(addBf16Kernel, blocks, kThreads, 0, stream, static_cast<const bf16*>(a), static_cast<const bf16*>(b),
                              static_cast<bf16*>(out), n));
  AFD_CUDA_CHECK_LAUNCH("addBf16Kernel");
}

void sigmoidGate(const void* x, const float* gate, void* out, int dtype, int64_t rows, int64_t n, int64_t groups,
                 cudaStream_t stream) {
  const int64_t total = rows * n;
  if (total == 0) return;
  const int blocks = static_cast<int>((total + kThreads - 1) / kThreads < 4096 ? (total + kThreads - 1) / kThreads : 4096);
  AFD_CUDA_CHECK(launchKernel(sigmoidGateKernel, blocks, kThreads, 0, stream, x, gate, out, dtype, total, n, groups));
  AFD_CUDA_CHECK_LAUNCH("sigmoidGateKernel");
}

void addBiasRows(float* out, const void* bias, int biasDtype, int rows, int n, cudaStream_t stream) {
  if (rows == 0) return;
  AFD_CUDA_CHECK(launchKernel(addBiasKernel, rows, kThreads, 0, stream, out, bias, biasDtype, n));
  AFD_CUDA_CHECK_LAUNCH("addBiasKernel");
}

void fillDummy(void* data, int dtype, size_t count, uint64_t key, float scale, float offset, cudaStream_t stream) {
  if (count == 0) return;
  const size_t blocks = (count + kThreads - 1) / kThreads;
  fillDummyKernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(data, dtype, count, key,
                                                                                                scale, offset);
  AFD_CUDA_CHECK_LAUNCH("fillDummyKernel");
}

void splitF32ToBf16(const float* x, void* hi, void* lo, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  AFD_CUDA_CHECK(launchKernel(splitBf16Kernel, static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream,
                              x, static_cast<bf16*>(hi), static_cast<bf16*>(lo), n));
}

void convertF32ToBf16(const float* x, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  AFD_CUDA_CHECK(launchKernel(toBf16Kernel, static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream, x, static_cast<bf16*>(out), n));
  AFD_CUDA_CHECK_LAUNCH("toBf16Kernel");
}

}  // namespace afd::cuda
