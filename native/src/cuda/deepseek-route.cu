#include "cuda/deepseek-route.cuh"

#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kNoId = 0x7fffffff;

__device__ __forceinline__ double warpSumDouble(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// (value, id) of the highest value over the warp, ties to the lower id; kNoId = no candidate.
__device__ __forceinline__ void warpArgmax(double& value, int& id) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const double otherValue = __shfl_xor_sync(0xffffffffu, value, offset);
    const int otherId = __shfl_xor_sync(0xffffffffu, id, offset);
    const bool better = otherId != kNoId && (id == kNoId || otherValue > value || (otherValue == value && otherId < id));
    if (better) {
      value = otherValue;
      id = otherId;
    }
  }
}

// The highest of values[0, n) not yet flagged in `used` (ties: lower index); every lane
// gets it. Each lane scans ascending indices, so a tie never replaces its first holder.
__device__ int argmaxUnused(const double* values, const unsigned char* used, int n) {
  const int lane = threadIdx.x & 31;
  double best = -INFINITY;
  int bestId = kNoId;
  for (int i = lane; i < n; i += 32) {
    if (used[i] == 0 && (bestId == kNoId || values[i] > best)) {
      best = values[i];
      bestId = i;
    }
  }
  warpArgmax(best, bestId);
  return bestId;
}

// One warp per token (block of 32 threads).
__global__ void __launch_bounds__(32) groupedRouteKernel(GroupedRouteArgs a) {
  pdlWait();
  __shared__ double score[kGroupedRouteMaxExperts];
  __shared__ double choice[kGroupedRouteMaxExperts];
  __shared__ double groupScore[kGroupedRouteMaxExperts];
  __shared__ unsigned char taken[kGroupedRouteMaxExperts];
  __shared__ unsigned char groupKept[kGroupedRouteMaxExperts];
  __shared__ int chosen[kGroupedRouteMaxExperts];
  const int row = blockIdx.x;
  const int lane = threadIdx.x;
  const int E = a.experts;
  const float* logits = a.logits + static_cast<size_t>(row) * E;

  if (a.scoring == kRouteScoringSoftmax) {
    float mx = -INFINITY;
    for (int e = lane; e < E; e += 32) mx = fmaxf(mx, logits[e]);
    mx = warpMax(mx);
    double sum = 0.0;
    for (int e = lane; e < E; e += 32) {
      const double v = exp(static_cast<double>(logits[e]) - static_cast<double>(mx));
      score[e] = v;
      sum += v;
    }
    sum = warpSumDouble(sum);
    for (int e = lane; e < E; e += 32) score[e] /= sum;
  } else if (a.scoring == kRouteScoringSigmoid) {
    for (int e = lane; e < E; e += 32) score[e] = 1.0 / (1.0 + exp(-static_cast<double>(logits[e])));
  } else {
    for (int e = lane; e < E; e += 32) score[e] = static_cast<double>(logits[e]);
  }
  for (int e = lane; e < E; e += 32) {
    const double bias = a.bias != nullptr ? static_cast<double>(loadAsFloat(a.bias, a.biasDtype, e)) : 0.0;
    choice[e] = score[e] + bias;
    taken[e] = 0;
  }
  __syncwarp();

  if (a.method != kRouteGreedy) {
    const int per = E / a.groups;
    for (int g = lane; g < a.groups; g += 32) {
      double value;
      if (a.method == kRouteGroupLimitedGreedy) {  // the group's best score
        value = score[g * per];
        for (int i = 1; i < per; ++i) value = fmax(value, score[g * per + i]);
      } else {  // noaux_tc: the sum of the group's two best choices
        double best = -INFINITY, second = -INFINITY;
        for (int i = 0; i < per; ++i) {
          const double c = choice[g * per + i];
          if (c > best) {
            second = best;
            best = c;
          } else if (c > second) {
            second = c;
          }
        }
        value = best + second;
      }
      groupScore[g] = value;
      groupKept[g] = 0;
    }
    __syncwarp();
    for (int j = 0; j < a.topkGroups; ++j) {
      const int g = argmaxUnused(groupScore, groupKept, a.groups);
      if (lane == 0) groupKept[g] = 1;
      __syncwarp();
    }
    for (int e = lane; e < E; e += 32)
      if (groupKept[e / per] == 0) choice[e] = -INFINITY;
    __syncwarp();
  }

  double chosenSum = 0.0;
  for (int j = 0; j < a.k; ++j) {
    const int e = argmaxUnused(choice, taken, E);
    if (lane == 0) {
      taken[e] = 1;
      chosen[j] = e;
      chosenSum += score[e];
    }
    __syncwarp();
  }
  if (lane == 0) {
    for (int j = 0; j < a.k; ++j) {
      const double s = score[chosen[j]];
      const double w = a.normTopk ? s / (chosenSum + 1e-20) : s;
      a.ids[static_cast<size_t>(row) * a.k + j] = chosen[j];
      a.weights[static_cast<size_t>(row) * a.k + j] = static_cast<float>(w * static_cast<double>(a.scale));
    }
  }
}

// One block per token.
__global__ void scatterRoutingKernel(const int32_t* ids, const float* weights, float* dense, int k, int experts) {
  pdlWait();
  const int row = blockIdx.x;
  const int32_t* rowIds = ids + static_cast<size_t>(row) * k;
  bool bad = false;
  for (int j = 0; j < k; ++j) bad = bad || rowIds[j] < 0 || rowIds[j] >= experts;
  float* out = dense + static_cast<size_t>(row) * experts;
  const float fill = bad ? __int_as_float(0x7fc00000) : 0.0f;
  for (int e = threadIdx.x; e < experts; e += blockDim.x) out[e] = fill;
  __syncthreads();
  if (bad) return;
  for (int j = threadIdx.x; j < k; j += blockDim.x) out[rowIds[j]] = weights[static_cast<size_t>(row) * k + j];
}

}  // namespace

void groupedRoute(const GroupedRouteArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  if (a.experts < 1 || a.experts > kGroupedRouteMaxExperts) {
    throw std::invalid_argument("moeGroupedRoute on CUDA: " + std::to_string(a.experts) + " experts (supported: 1.." +
                                std::to_string(kGroupedRouteMaxExperts) + ")");
  }
  if (a.k < 1 || a.k > a.experts) throw std::invalid_argument("moeGroupedRoute on CUDA: k must be in [1, experts]");
  if (a.method != kRouteGreedy &&
      (a.groups < 1 || a.experts % a.groups != 0 || a.topkGroups < 1 || a.topkGroups > a.groups ||
       static_cast<int64_t>(a.topkGroups) * (a.experts / a.groups) < a.k)) {
    throw std::invalid_argument("moeGroupedRoute on CUDA: the groups must divide the experts and hold top-k");
  }
  if (a.logits == nullptr || a.ids == nullptr || a.weights == nullptr) {
    throw std::invalid_argument("moeGroupedRoute on CUDA: logits, ids and weights must be given");
  }
  AFD_CUDA_CHECK(launchKernel(groupedRouteKernel, dim3(a.rows), dim3(32), 0, stream, a));
  AFD_CUDA_CHECK_LAUNCH("groupedRouteKernel");
}

void scatterRouting(const int32_t* ids, const float* weights, float* dense, int rows, int k, int experts,
                    cudaStream_t stream) {
  if (rows == 0) return;
  if (k < 0 || experts < 1) throw std::invalid_argument("scatterRouting on CUDA: experts must be positive and k non-negative");
  AFD_CUDA_CHECK(launchKernel(scatterRoutingKernel, dim3(rows), dim3(128), 0, stream, ids, weights, dense, k, experts));
  AFD_CUDA_CHECK_LAUNCH("scatterRoutingKernel");
}

}  // namespace afd::cuda
