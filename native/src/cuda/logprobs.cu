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

constexpr int kThreads = 256;

// Split over the row: block (j, c) reads chunk c of output row j's logits once (then again
// from cache for its sum), so a row is spread over the GPU instead of one SM (one block per
// row took ~0.13 ms a step at batch 1 for a 151,936-entry row). Per chunk: its max, the sum
// of exp((x - max) / T), the count of tokens above the chosen one and its k largest (each
// thread's sorted list, ids ascending on ties, merged in k rounds of block arg-max).
__global__ void __launch_bounds__(kThreads) logprobChunkKernel(LogprobArgs a) {
  pdlWait();
  __shared__ Best bestScratch[32];
  __shared__ float floatScratch[32];
  const int j = blockIdx.x, c = blockIdx.y, C = gridDim.y;
  const int row = a.rowOf != nullptr ? a.rowOf[j] : j;
  const int V = a.vocab;
  const float* l = a.logits + static_cast<size_t>(row) * V;
  const int target = a.targets != nullptr ? a.targets[j] : a.sampledTokens[row];
  const float t = a.temperature != nullptr ? a.temperature[j] : 1.0f;
  const float invT = t > 0.0f ? 1.0f / t : 1.0f;
  const int k = a.topK[j];
  const float chosen = l[target];
  const int begin = c * a.chunk, end = min(V, begin + a.chunk);

  float topV[kMaxTopLogprobs];
  int topI[kMaxTopLogprobs];
  int n = 0;
  float mx = -INFINITY;
  float above = 0.0f;  // exact: a count below 2^24
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
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
  if (mx != -INFINITY)  // a chunk a mask banned whole adds nothing
    for (int i = begin + threadIdx.x; i < end; i += blockDim.x) sum += expf((l[i] - mx) * invT);
  sum = blockSum(sum, floatScratch);

  const size_t part = static_cast<size_t>(j) * C + c;
  const int K = a.width - 1;
  int head = 0;
  for (int r = 0; r < k; ++r) {
    const Best mine = head < n ? Best{topV[head], topI[head]} : Best{-INFINITY, INT_MAX};
    const Best best = blockArgmax(mine, bestScratch);
    if (head < n && topI[head] == best.id) ++head;
    if (threadIdx.x == 0) {
      a.partTopV[part * K + r] = best.value;
      a.partTopI[part * K + r] = best.id;
    }
  }
  if (threadIdx.x == 0) {
    a.partStats[part * 3] = mx;
    a.partStats[part * 3 + 1] = sum;
    a.partStats[part * 3 + 2] = above;
  }
}

// Block j merges row j's chunks: the max, the sum rescaled to it (online softmax), the
// rank, and the top k in k rounds of block arg-max over the chunks' sorted lists (thread
// c holds chunk c's), then writes the row.
__global__ void __launch_bounds__(kThreads) logprobMergeKernel(LogprobArgs a, int C) {
  pdlWait();  // the chunks' partials
  __shared__ Best bestScratch[32];
  __shared__ float floatScratch[32];
  const int j = blockIdx.x;
  const int row = a.rowOf != nullptr ? a.rowOf[j] : j;
  const float* l = a.logits + static_cast<size_t>(row) * a.vocab;
  const int target = a.targets != nullptr ? a.targets[j] : a.sampledTokens[row];
  const float t = a.temperature != nullptr ? a.temperature[j] : 1.0f;
  const float invT = t > 0.0f ? 1.0f / t : 1.0f;
  const int k = a.topK[j];
  const int K = a.width - 1;
  const float* stats = a.partStats + static_cast<size_t>(j) * C * 3;
  float mx = -INFINITY, above = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    mx = fmaxf(mx, stats[c * 3]);
    above += stats[c * 3 + 2];
  }
  mx = blockMax(mx, floatScratch);
  above = blockSum(above, floatScratch);
  float sum = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    if (stats[c * 3] != -INFINITY) sum += stats[c * 3 + 1] * expf((stats[c * 3] - mx) * invT);
  sum = blockSum(sum, floatScratch);
  const float logSum = logf(sum);

  int32_t* ids = a.outIds + static_cast<size_t>(j) * a.width;
  float* values = a.outLogprobs + static_cast<size_t>(j) * a.width;
  // Thread c walks chunk c's list (C <= kThreads: logprobRows sizes the chunks so).
  const size_t first = (static_cast<size_t>(j) * C + threadIdx.x) * K;
  int head = 0;
  for (int r = 0; r < k; ++r) {
    const bool has = static_cast<int>(threadIdx.x) < C && head < k;
    const Best mine = has ? Best{a.partTopV[first + head], a.partTopI[first + head]} : Best{-INFINITY, INT_MAX};
    const Best best = blockArgmax(mine, bestScratch);
    if (has && mine.id == best.id && mine.id != INT_MAX) ++head;
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
    values[0] = (l[target] - mx) * invT - logSum;
    a.outRanks[j] = 1 + static_cast<int32_t>(above);
  }
}

}  // namespace

void logprobRows(const LogprobArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  if (a.vocab <= 0) throw std::invalid_argument("logprobRows: vocab must be positive");
  if (a.targets == nullptr && (a.sampledTokens == nullptr)) throw std::invalid_argument("logprobRows: no chosen tokens");
  if (a.partStats == nullptr || a.partTopV == nullptr || a.partTopI == nullptr) throw std::invalid_argument("logprobRows: no room for the chunks' partials");
  const int C = logprobChunks(a.vocab);
  LogprobArgs b = a;
  b.chunk = (a.vocab + C - 1) / C;
  AFD_CUDA_CHECK(launchKernel(logprobChunkKernel, dim3(static_cast<unsigned>(a.rows), static_cast<unsigned>(C)), dim3(kThreads), 0, stream, b));
  AFD_CUDA_CHECK_LAUNCH("logprobChunkKernel");
  AFD_CUDA_CHECK(launchKernel(logprobMergeKernel, a.rows, kThreads, 0, stream, b, C));
  AFD_CUDA_CHECK_LAUNCH("logprobMergeKernel");
}

}  // namespace afd::cuda
