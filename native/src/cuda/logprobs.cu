#include "cuda/logprobs.cuh"

#include <climits>
#include <stdexcept>

#include "core/logit-ops.h"
#include "cuda/bf16-vec.cuh"
#include "cuda/block-best.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 512;

// One block per output row: pass 1 reads the row once for its max, the count of tokens
// above the chosen one and each thread's k largest (a sorted list, ids ascending so an
// equal value never displaces an earlier id); pass 2 sums exp((x - max) / T); then k
// rounds of block arg-max over the lists' heads give the top k in order.
__global__ void __launch_bounds__(kThreads) logprobKernel(LogprobArgs a) {
  pdlWait();
  __shared__ Best bestScratch[32];
  __shared__ float floatScratch[32];
  const int j = blockIdx.x;
  const int row = a.rowOf != nullptr ? a.rowOf[j] : j;
  const int V = a.vocab;
  const float* l = a.logits + static_cast<size_t>(row) * V;
  const int target = a.targets != nullptr ? a.targets[j] : a.sampledTokens[row];
  const float t = a.temperature != nullptr ? a.temperature[j] : 1.0f;
  const float invT = t > 0.0f ? 1.0f / t : 1.0f;
  const int k = a.topK[j];
  const float chosen = l[target];

  float topV[kMaxTopLogprobs];
  int topI[kMaxTopLogprobs];
  int n = 0;
  float mx = -INFINITY;
  float above = 0.0f;  // exact: a count below 2^24
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float x = l[i];
    mx = fmaxf(mx, x);
    above += x > chosen ? 1.0f : 0.0f;
    if (n < k || (k > 0 && x > topV[k - 1])) {
      int at = n < k ? n++ : k - 1;
      while (at > 0 && x > topV[at - 1]) {
        topV[at] = topV[at - 1];
        topI[at] = topI[at - 1];
        --at;
      }
      topV[at] = x;
      topI[at] = i;
    }
  }
  mx = blockMax(mx, floatScratch);
  above = blockSum(above, floatScratch);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) sum += expf((l[i] - mx) * invT);
  sum = blockSum(sum, floatScratch);
  const float logSum = logf(sum);

  int32_t* ids = a.outIds + static_cast<size_t>(j) * a.width;
  float* values = a.outLogprobs + static_cast<size_t>(j) * a.width;
  int head = 0;
  for (int r = 0; r < k; ++r) {
    const Best mine = head < n ? Best{topV[head], topI[head]} : Best{-INFINITY, INT_MAX};
    const Best best = blockArgmax(mine, bestScratch);
    if (head < n && topI[head] == best.id) ++head;
    if (threadIdx.x == 0) {
      const bool real = best.id != INT_MAX;  // fewer tokens than k: pad
      ids[1 + r] = real ? best.id : -1;
      values[1 + r] = real ? (best.value - mx) * invT - logSum : __int_as_float(0x7fc00000);
    }
  }
  for (int e = 1 + k + threadIdx.x; e < a.width; e += blockDim.x) {
    ids[e] = -1;
    values[e] = __int_as_float(0x7fc00000);  // NaN
  }
  if (threadIdx.x == 0) {
    ids[0] = target;
    values[0] = (chosen - mx) * invT - logSum;
    a.outRanks[j] = 1 + static_cast<int32_t>(above);
  }
}

}  // namespace

void logprobRows(const LogprobArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  if (a.vocab <= 0) throw std::invalid_argument("logprobRows: vocab must be positive");
  if (a.targets == nullptr && (a.sampledTokens == nullptr)) throw std::invalid_argument("logprobRows: no chosen tokens");
  AFD_CUDA_CHECK(launchKernel(logprobKernel, a.rows, kThreads, 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("logprobKernel");
}

}  // namespace afd::cuda
