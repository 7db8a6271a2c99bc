#include "cuda/norm.cuh"

#include <stdexcept>
#include <string>

#include "core/dummy-weights.h"

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"
#include "cuda/dtype-load.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void embeddingKernel(const int32_t* ids, const void* table, int dtype, float* out, int hidden, int vocab) {
  pdlWait();
  const int row = blockIdx.x;
  const int id = ids[row];
  float* dst = out + static_cast<size_t>(row) * hidden;
  const bool ok = id >= 0 && id < vocab;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    dst[i] = ok ? loadAsFloat(table, dtype, static_cast<size_t>(id) * hidden + i) : __int_as_float(0x7fc00000);
  }
}

// One block per row.
__global__ void addRmsNormKernel(float* residual, const void* delta, bool deltaIsBf16, const void* weight,
                                 int weightDtype, void* out, bool outIsBf16, int hidden, float eps) {
  pdlWait();
  __shared__ float scratch[32];
  const size_t base = static_cast<size_t>(blockIdx.x) * hidden;
  float* res = residual + base;
  float sumSquares = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v = res[i];
    if (delta != nullptr) {
      v += deltaIsBf16 ? __bfloat162float(static_cast<const bf16*>(delta)[base + i]) : static_cast<const float*>(delta)[base + i];
      res[i] = v;
    }
    sumSquares += v * v;
  }
  const float total = blockSum(sumSquares, scratch);
  const float scale = rsqrtf(total / static_cast<float>(hidden) + eps);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float v = loadAsFloat(weight, weightDtype, i) * (res[i] * scale);
    if (outIsBf16) {
      static_cast<bf16*>(out)[base + i] = __float2bfloat16(v);
    } else {
      static_cast<float*>(out)[base + i] = v;
    }
  }
}

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

template <typename T>
__global__ void gatherRowsKernel(const T* x, const int32_t* rows, T* out, int width) {
  pdlWait();
  const T* src = x + static_cast<size_t>(rows[blockIdx.x]) * width;
  T* dst = out + static_cast<size_t>(blockIdx.x) * width;
  for (int i = threadIdx.x; i < width; i += blockDim.x) dst[i] = src[i];
}

__global__ void fillDummyKernel(void* data, int dtype, size_t count, uint64_t key, float scale, float offset) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    storeFromFloat(data, dtype, i, dummyValue(key, i, scale, offset));
}

__global__ void addBiasKernel(float* out, const void* bias, int dtype, int n) {
  pdlWait();
  float* row = out + static_cast<size_t>(blockIdx.x) * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] += loadAsFloat(bias, dtype, i);
}

}  // namespace

void embeddingLookup(const int32_t* ids, const void* table, int tableDtype, float* out, int rows, int hidden, int vocab,
                     cudaStream_t stream) {
  if (rows == 0) return;
  AFD_CUDA_CHECK(launchKernel(embeddingKernel, rows, kThreads, 0, stream, ids, table, tableDtype, out, hidden, vocab));
  AFD_CUDA_CHECK_LAUNCH("embeddingKernel");
}

void addRmsNorm(float* residual, const void* delta, bool deltaIsBf16, const void* weight, int weightDtype, void* out,
                bool outIsBf16, int rows, int hidden, float eps, cudaStream_t stream) {
  if (rows == 0) return;
  if (hidden <= 0) throw std::invalid_argument("addRmsNorm: hidden must be positive");
  AFD_CUDA_CHECK(launchKernel(addRmsNormKernel, rows, 1024, 0, stream, residual, delta, deltaIsBf16, weight, weightDtype,
                              out, outIsBf16, hidden, eps));
  AFD_CUDA_CHECK_LAUNCH("addRmsNormKernel");
}

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

void gatherRows(const void* x, const int32_t* rows, void* out, int numRows, int width, int elemBytes,
                cudaStream_t stream) {
  if (numRows == 0) return;
  if (elemBytes == 4) {
    AFD_CUDA_CHECK(launchKernel(gatherRowsKernel<float>, numRows, kThreads, 0, stream, static_cast<const float*>(x), rows,
                                static_cast<float*>(out), width));
  } else if (elemBytes == 2) {
    AFD_CUDA_CHECK(launchKernel(gatherRowsKernel<uint16_t>, numRows, kThreads, 0, stream, static_cast<const uint16_t*>(x),
                                rows, static_cast<uint16_t*>(out), width));
  } else {
    throw std::invalid_argument("gatherRows: elements of " + std::to_string(elemBytes) + " bytes (supported: 2, 4)");
  }
  AFD_CUDA_CHECK_LAUNCH("gatherRowsKernel");
}

void fillDummy(void* data, int dtype, size_t count, uint64_t key, float scale, float offset, cudaStream_t stream) {
  if (count == 0) return;
  const size_t blocks = (count + kThreads - 1) / kThreads;
  fillDummyKernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(data, dtype, count, key,
                                                                                                scale, offset);
  AFD_CUDA_CHECK_LAUNCH("fillDummyKernel");
}

void addBiasRows(float* out, const void* bias, int biasDtype, int rows, int n, cudaStream_t stream) {
  if (rows == 0) return;
  AFD_CUDA_CHECK(launchKernel(addBiasKernel, rows, kThreads, 0, stream, out, bias, biasDtype, n));
  AFD_CUDA_CHECK_LAUNCH("addBiasKernel");
}

}  // namespace afd::cuda

namespace afd::cuda {
namespace {
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
