#include "cuda/logit-processing.cuh"

#include <stdexcept>

#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) logitProcessingKernel(LogitProcessingArgs a) {
  pdlWait();
  const int r = blockIdx.x;
  float* l = a.logits + static_cast<size_t>(r) * a.vocab;
  for (int e = a.biasOffsets[r] + threadIdx.x; e < a.biasOffsets[r + 1]; e += blockDim.x) l[a.biasIds[e]] += a.biasValues[e];
  __syncthreads();  // a token may be both biased and seen: the bias comes first
  const float rep = a.repetition[r], freq = a.frequency[r], pres = a.presence[r];
  for (int e = a.seenOffsets[r] + threadIdx.x; e < a.seenOffsets[r + 1]; e += blockDim.x) {
    float x = l[a.seenIds[e]];
    const int count = a.seenCounts[e];
    x = x > 0.0f ? x / rep : x * rep;
    x -= freq * static_cast<float>(count);
    if (count > 0) x -= pres;
    l[a.seenIds[e]] = x;
  }
}

}  // namespace

// One block per row; nothing to launch for no rows.
void processLogitRows(const LogitProcessingArgs& a, cudaStream_t stream) {
  if (a.vocab <= 0) throw std::invalid_argument("processLogitRows: vocab must be positive");
  if (a.rows > 0) {
    AFD_CUDA_CHECK(launchKernel(logitProcessingKernel, a.rows, kThreads, 0, stream, a));
    AFD_CUDA_CHECK_LAUNCH("logitProcessingKernel");
  }
}

}  // namespace afd::cuda
