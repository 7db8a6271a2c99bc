#include "cuda/expert-gemm-kernels.cuh"

#include <cstdio>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocksFor(size_t work) {
  const size_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

// One thread per 8 columns of one row.
__global__ void gatherKernel(const void* x, bool xIsF32, const int32_t* src, int rows, int cols, uint4* out) {
  const int vecs = cols / 8;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(rows) * vecs;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i / vecs);
    const int v = static_cast<int>(i % vecs);
    const size_t from = static_cast<size_t>(src[r]) * cols + 8 * v;
    if (xIsF32) {
      const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(x) + from);
      const float4 a = p[0], b = p[1];
      const float f[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      out[i] = floatToBf16x8(f);
    } else {
      out[i] = *reinterpret_cast<const uint4*>(static_cast<const bf16*>(x) + from);
    }
  }
}

__global__ void siluMulKernel(const uint4* gu, int rows, int inter, uint4* act) {
  const int vecs = inter / 8;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(rows) * vecs;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = i / vecs;
    const size_t v = i % vecs;
    float g[8], u[8], a[8];
    bf16x8ToFloat(gu[r * 2 * vecs + v], g);
    bf16x8ToFloat(gu[r * 2 * vecs + vecs + v], u);
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = g[j] / (1.0f + __expf(-g[j])) * u[j];
    act[i] = floatToBf16x8(a);
  }
}

// 8 elements per step (16-byte loads, two 16-byte stores), then the tail one by one.
__global__ void widenKernel(const bf16* in, size_t count, float* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t vecs = count / 8;
  for (size_t i = first; i < vecs; i += stride) {
    float f[8];
    bf16x8ToFloat(reinterpret_cast<const uint4*>(in)[i], f);
    float4* o = reinterpret_cast<float4*>(out + 8 * i);
    o[0] = make_float4(f[0], f[1], f[2], f[3]);
    o[1] = make_float4(f[4], f[5], f[6], f[7]);
  }
  for (size_t i = 8 * vecs + first; i < count; i += stride) out[i] = __bfloat162float(in[i]);
}

__device__ __forceinline__ const void* expertWeight(const ExpertWeightsView& w, int which, int e, int numExperts) {
  if (w.table != nullptr) return w.table[which * numExperts + e];
  const void* base = which == 0 ? w.gate : which == 1 ? w.up : w.down;
  return static_cast<const bf16*>(base) + static_cast<size_t>(e) * w.expertStride;
}

struct PointerKernelArgs {
  const int32_t* offsets;
  const int32_t* active;
  int numActive;
  int numExperts;
  ExpertWeightsView weights;
  const bf16* xPerm;
  bf16* gu;
  const bf16* act;
  bf16* outRows;
  int hidden;
  int inter;
  ExpertPointerArrays arrays;
};

__global__ void pointerKernel(PointerKernelArgs a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.numActive) return;
  const int e = a.active[i];
  const bool ok = e >= 0 && e < a.numExperts && a.offsets[e + 1] > a.offsets[e] &&
                  (i + 1 == a.numActive ? true : a.active[i + 1] > e);
  if (!ok) {
    printf("expert GEMM (cuBLAS): the host's count of %d active experts disagrees with the device permutation at "
           "slot %d (expert %d); the host copy of the expert offsets is stale\n",
           a.numActive, i, e);
    __trap();
  }
  const size_t o = static_cast<size_t>(a.offsets[e]);
  a.arrays.guX[2 * i] = a.arrays.guX[2 * i + 1] = a.xPerm + o * a.hidden;
  a.arrays.guW[2 * i] = expertWeight(a.weights, 0, e, a.numExperts);
  a.arrays.guW[2 * i + 1] = expertWeight(a.weights, 1, e, a.numExperts);
  a.arrays.guOut[2 * i] = a.gu + o * 2 * a.inter;
  a.arrays.guOut[2 * i + 1] = a.gu + o * 2 * a.inter + a.inter;
  a.arrays.downX[i] = a.act + o * a.inter;
  a.arrays.downW[i] = expertWeight(a.weights, 2, e, a.numExperts);
  a.arrays.downOut[i] = a.outRows + o * a.hidden;
}

}  // namespace

void gatherRowsToBf16(const void* x, bool xIsF32, const int32_t* src, int rows, int cols, void* out,
                      cudaStream_t stream) {
  if (rows == 0) return;
  gatherKernel<<<blocksFor(static_cast<size_t>(rows) * (cols / 8)), kThreads, 0, stream>>>(
      x, xIsF32, src, rows, cols, static_cast<uint4*>(out));
  AFD_CUDA_CHECK_LAUNCH("gatherKernel");
}

void siluMulBf16(const void* gu, int rows, int inter, void* act, cudaStream_t stream) {
  if (rows == 0) return;
  siluMulKernel<<<blocksFor(static_cast<size_t>(rows) * (inter / 8)), kThreads, 0, stream>>>(
      static_cast<const uint4*>(gu), rows, inter, static_cast<uint4*>(act));
  AFD_CUDA_CHECK_LAUNCH("siluMulKernel");
}

void widenBf16ToF32(const void* in, size_t count, float* out, cudaStream_t stream) {
  if (count == 0) return;
  widenKernel<<<blocksFor(count / 8 + 1), kThreads, 0, stream>>>(static_cast<const bf16*>(in), count, out);
  AFD_CUDA_CHECK_LAUNCH("widenKernel");
}

void buildExpertPointers(const int32_t* expertOffsets, const int32_t* activeExperts, int numActive, int numExperts,
                         const ExpertWeightsView& weights, const void* xPerm, void* gu, const void* act,
                         void* outRows, int hidden, int inter, const ExpertPointerArrays& arrays, cudaStream_t stream) {
  if (numActive == 0) return;
  PointerKernelArgs a;
  a.offsets = expertOffsets;
  a.active = activeExperts;
  a.numActive = numActive;
  a.numExperts = numExperts;
  a.weights = weights;
  a.xPerm = static_cast<const bf16*>(xPerm);
  a.gu = static_cast<bf16*>(gu);
  a.act = static_cast<const bf16*>(act);
  a.outRows = static_cast<bf16*>(outRows);
  a.hidden = hidden;
  a.inter = inter;
  a.arrays = arrays;
  pointerKernel<<<(numActive + 127) / 128, 128, 0, stream>>>(a);
  AFD_CUDA_CHECK_LAUNCH("expert pointer kernel");
}

}  // namespace afd::cuda
