// The row- and element-wise linear-attention kernels: the depthwise causal conv with its
// rolling state, the gated RMSNorm and the delta rule's gates (the rule itself:
// gated-delta-rule.cu). Same f32 math as the CPU ops (cpu/linear-attention.cc).
#include <stdexcept>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"
#include "cuda/linear-attention.cuh"

namespace afd::cuda {
namespace {

constexpr int kConvThreads = 128;
constexpr int kNormRowsPerBlock = 8;  // one warp per row
constexpr int kGatingThreads = 256;

__device__ __forceinline__ float siluf(float x) { return x / (1.0f + expf(-x)); }

// One thread per (sequence, channel), walking the sequence's tokens in order with the
// last kCtx = W - 1 inputs in registers: x[t] is read before out[t] is written, so out
// may alias x, and a chunk shorter than kCtx keeps the older context in the window (the
// new state is the last kCtx of (old state or zeros) ++ inputs, as HF's concat-and-slice).
// Grid: (channel blocks, sequences).
//
// Long single-sequence prefills walk T tokens serially per thread; splitting tokens across
// blocks would need the inputs before each split kept aside (out may overwrite them).
template <int kCtx>
__global__ void causalConv1dKernel(const float* x, const void* weight, int weightDtype, float* convState,
                                   LinearBatchArgs batch, float* out, int channels) {
  pdlWait();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int s = blockIdx.y;
  if (c >= channels) return;
  float w[kCtx + 1];
#pragma unroll
  for (int j = 0; j <= kCtx; ++j) w[j] = loadAsFloat(weight, weightDtype, static_cast<size_t>(c) * (kCtx + 1) + j);
  float* state = convState + (static_cast<size_t>(batch.stateSlots[s]) * channels + c) * kCtx;
  const bool hasState = batch.hasState[s] != 0;
  float window[kCtx > 0 ? kCtx : 1];  // oldest first
#pragma unroll
  for (int j = 0; j < kCtx; ++j) window[j] = hasState ? state[j] : 0.0f;
  const int end = batch.seqStarts[s + 1];
  for (int t = batch.seqStarts[s]; t < end; ++t) {
    const size_t at = static_cast<size_t>(t) * channels + c;
    const float xt = x[at];
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kCtx; ++j) acc += w[j] * window[j];
    acc += w[kCtx] * xt;
    if constexpr (kCtx > 0) {
#pragma unroll
      for (int j = 0; j + 1 < kCtx; ++j) window[j] = window[j + 1];
      window[kCtx - 1] = xt;
    }
    out[at] = siluf(acc);
  }
#pragma unroll
  for (int j = 0; j < kCtx; ++j) state[j] = window[j];
}

template <int kCtx>
cudaError_t launchConv(const float* x, const void* weight, int weightDtype, float* convState, const LinearBatchArgs& batch,
                       float* out, int channels, cudaStream_t stream) {
  const dim3 grid((channels + kConvThreads - 1) / kConvThreads, batch.numSeqs);
  return launchKernel(causalConv1dKernel<kCtx>, grid, kConvThreads, 0, stream, x, weight, weightDtype, convState, batch,
                      out, channels);
}

// One warp per row of dim: the sum of squares first (every lane's reads of x end before the
// warp reduction), then out = weight * (x * inv) * silu(z), so out may alias x.
__global__ void rmsNormGatedKernel(const float* x, const float* z, const void* weight, int weightDtype, float eps,
                                   float* out, int rows, int dim) {
  pdlWait();
  const int row = blockIdx.x * kNormRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const size_t base = static_cast<size_t>(row) * dim;
  float sumSquares = 0.0f;
  for (int i = lane; i < dim; i += 32) sumSquares += x[base + i] * x[base + i];
  sumSquares = warpSum(sumSquares);
  const float inv = 1.0f / sqrtf(sumSquares / static_cast<float>(dim) + eps);
  for (int i = lane; i < dim; i += 32) {
    const float zi = z[base + i];
    out[base + i] = loadAsFloat(weight, weightDtype, i) * (x[base + i] * inv) * siluf(zi);
  }
}

// g = -exp(A_log) softplus(a + dt_bias) (torch's softplus: x > 20 returned as is),
// beta = sigmoid(b); one thread per element of [rows, heads].
__global__ void gdnGatingKernel(const float* a, const float* b, const void* aLog, int aLogDtype, const void* dtBias,
                                int dtBiasDtype, float* g, float* beta, int64_t n, int heads) {
  pdlWait();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int h = static_cast<int>(i % heads);
  const float x = a[i] + loadAsFloat(dtBias, dtBiasDtype, h);
  const float softplus = x > 20.0f ? x : log1pf(expf(x));
  g[i] = -expf(loadAsFloat(aLog, aLogDtype, h)) * softplus;
  beta[i] = 1.0f / (1.0f + expf(-b[i]));
}

constexpr int kSplitThreads = 256;

// One thread per element of x: row t, column c goes to the output whose range holds c.
__global__ void splitColumnsKernel(const float* x, SplitColumnsArgs a, int64_t total) {
  pdlWait();
  const int columns = a.begins[a.numOuts];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / columns;
    const int c = static_cast<int>(i - t * columns);
    int o = 0;
    while (o + 1 < a.numOuts && c >= a.begins[o + 1]) ++o;
    const int width = a.begins[o + 1] - a.begins[o];
    a.outs[o][t * width + (c - a.begins[o])] = x[i];
  }
}

}  // namespace

void splitColumns(const float* x, const SplitColumnsArgs& a, int64_t rows, cudaStream_t stream) {
  const int64_t total = rows * a.begins[a.numOuts];
  if (total == 0) return;
  const int64_t want = (total + kSplitThreads - 1) / kSplitThreads;
  const int blocks = static_cast<int>(want < 8192 ? want : 8192);
  AFD_CUDA_CHECK(launchKernel(splitColumnsKernel, blocks, kSplitThreads, 0, stream, x, a, total));
  AFD_CUDA_CHECK_LAUNCH("splitColumnsKernel");
}

void causalConv1d(const float* x, const void* weight, int weightDtype, float* convState, const LinearBatchArgs& batch,
                  float* out, int channels, int width, cudaStream_t stream) {
  if (batch.numSeqs == 0 || channels == 0) return;
  cudaError_t err = cudaErrorInvalidValue;
  switch (width) {
    case 1: err = launchConv<0>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    case 2: err = launchConv<1>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    case 3: err = launchConv<2>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    case 4: err = launchConv<3>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    case 5: err = launchConv<4>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    case 6: err = launchConv<5>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    case 7: err = launchConv<6>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    case 8: err = launchConv<7>(x, weight, weightDtype, convState, batch, out, channels, stream); break;
    default:
      throw std::invalid_argument("causalConv1d: kernel width " + std::to_string(width) + " is outside [1, " +
                                  std::to_string(kConvMaxWidth) + "]");
  }
  AFD_CUDA_CHECK(err);
  AFD_CUDA_CHECK_LAUNCH("causalConv1dKernel");
}

void rmsNormGated(const float* x, const float* z, const void* weight, int weightDtype, float eps, float* out, int rows,
                  int dim, cudaStream_t stream) {
  if (rows == 0 || dim == 0) return;
  const int blocks = (rows + kNormRowsPerBlock - 1) / kNormRowsPerBlock;
  AFD_CUDA_CHECK(launchKernel(rmsNormGatedKernel, blocks, 32 * kNormRowsPerBlock, 0, stream, x, z, weight, weightDtype,
                              eps, out, rows, dim));
  AFD_CUDA_CHECK_LAUNCH("rmsNormGatedKernel");
}

void gdnGating(const float* a, const float* b, const void* aLog, int aLogDtype, const void* dtBias, int dtBiasDtype,
               float* g, float* beta, int rows, int heads, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(rows) * heads;
  if (n == 0) return;
  const int blocks = static_cast<int>((n + kGatingThreads - 1) / kGatingThreads);
  AFD_CUDA_CHECK(launchKernel(gdnGatingKernel, blocks, kGatingThreads, 0, stream, a, b, aLog, aLogDtype, dtBias,
                              dtBiasDtype, g, beta, n, heads));
  AFD_CUDA_CHECK_LAUNCH("gdnGatingKernel");
}

}  // namespace afd::cuda
