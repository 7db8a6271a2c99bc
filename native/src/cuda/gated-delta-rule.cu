// The gated delta rule (core/backend.h, "linear attention"), recurrent: every sequence's
// tokens in order, the state in registers, f32 math as the CPU op (cpu/linear-attention.cc).
//
// Per sequence, v-head h and token t, with k-head h / (Hv / Hk), q and k L2-normed
// (x / sqrt(sum x^2 + 1e-6)) and q scaled by 1 / sqrt(Dk), state S [Dk, Dv]:
//   S *= exp(g);  delta = beta (v - S^T k);  S += k delta^T;  out = S^T q.
// The value columns j of S never mix (each reads k and q whole but only its own v[j]), so
// one warp owns one column: lane l holds S[l + 32 m, j] for m < kKeysPerLane and the
// products over the key dim are warp reductions. No shared memory, no block barrier;
// a block is kWarps adjacent columns of one (sequence, head), whose state reads share
// 32-byte sectors.
//
// Future work: long prefills would run faster chunked (HF's torch_chunk_gated_delta_rule,
// FLA's chunk kernels: a chunk's tokens as matrix products on the tensor cores, the
// state carried across chunks); this kernel walks T tokens serially per warp.
#include <stdexcept>
#include <string>

#include "cuda/bf16-vec.cuh"
#include "cuda/cuda-check.h"
#include "cuda/launch.cuh"
#include "cuda/linear-attention.cuh"

namespace afd::cuda {
namespace {

constexpr int kWarps = 8;  // value columns per block
// Matches the CPU op's (and HF's) l2norm epsilon, inside the root.
constexpr float kL2NormEps = 1e-6f;

// Grid: (Hv * ceil(Dv / kWarps), sequences); block: kWarps warps.
template <int kKeysPerLane>
__global__ void gatedDeltaRuleKernel(GatedDeltaRuleArgs a, LinearBatchArgs batch) {
  pdlWait();
  const int Dk = a.keyDim, Dv = a.valueDim, Hk = a.keyHeads, Hv = a.valueHeads;
  const int colBlocks = (Dv + kWarps - 1) / kWarps;
  const int h = blockIdx.x / colBlocks;
  const int j = blockIdx.x % colBlocks * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int s = blockIdx.y;
  if (j >= Dv) return;  // a whole warp: nothing below synchronizes across warps
  const int kh = h / (Hv / Hk);
  float* S = a.state + (static_cast<size_t>(batch.stateSlots[s]) * Hv + h) * Dk * Dv + j;  // S[i * Dv]: column j
  const bool hasState = batch.hasState[s] != 0;
  float st[kKeysPerLane];
#pragma unroll
  for (int m = 0; m < kKeysPerLane; ++m) {
    const int i = lane + 32 * m;
    st[m] = hasState && i < Dk ? S[static_cast<size_t>(i) * Dv] : 0.0f;
  }
  const int end = batch.seqStarts[s + 1];
  for (int t = batch.seqStarts[s]; t < end; ++t) {
    const float* qt = a.q + (static_cast<size_t>(t) * Hk + kh) * Dk;
    const float* kt = a.k + (static_cast<size_t>(t) * Hk + kh) * Dk;
    const size_t th = static_cast<size_t>(t) * Hv + h;
    float qv[kKeysPerLane], kv[kKeysPerLane];
    float qSquares = 0.0f, kSquares = 0.0f;
#pragma unroll
    for (int m = 0; m < kKeysPerLane; ++m) {
      const int i = lane + 32 * m;
      qv[m] = i < Dk ? qt[i] : 0.0f;
      kv[m] = i < Dk ? kt[i] : 0.0f;
      qSquares += qv[m] * qv[m];
      kSquares += kv[m] * kv[m];
    }
    const float qInv = 1.0f / sqrtf(warpSum(qSquares) + kL2NormEps) * a.qScale;
    const float kInv = 1.0f / sqrtf(warpSum(kSquares) + kL2NormEps);
    const float decay = expf(a.g[th]);
    const float beta = a.beta[th];
    const float vt = a.v[th * Dv + j];
    // Decay, then delta = beta (v - S^T k): the correction that moves S^T k toward v.
    float recalled = 0.0f;
#pragma unroll
    for (int m = 0; m < kKeysPerLane; ++m) {
      kv[m] *= kInv;
      st[m] *= decay;
      recalled += kv[m] * st[m];
    }
    const float delta = (vt - warpSum(recalled)) * beta;
    // S += k delta; out = S^T q, read after the update like HF.
    float o = 0.0f;
#pragma unroll
    for (int m = 0; m < kKeysPerLane; ++m) {
      st[m] += kv[m] * delta;
      o += qv[m] * qInv * st[m];
    }
    o = warpSum(o);
    if (lane == 0) a.out[th * Dv + j] = o;
  }
#pragma unroll
  for (int m = 0; m < kKeysPerLane; ++m) {
    const int i = lane + 32 * m;
    if (i < Dk) S[static_cast<size_t>(i) * Dv] = st[m];
  }
}

// Decode-shaped batches (one token per sequence; any count works, tokens one after another):
// lane l of every warp owns value column j = 32 x tile + l, and warp w the key rows
// [w R, w R + R), so each state row of 32 columns is one coalesced 128-byte access (the warp
// kernel above reads a column, 32 rows apart). The products over the key dim add the four
// warps' partial sums in shared memory. Grid: (Hv * ceil(Dv / 32), sequences); block: 4 warps.
constexpr int kColumnWarps = 4;

template <int R>
__global__ void gatedDeltaRuleColumnsKernel(GatedDeltaRuleArgs a, LinearBatchArgs batch) {
  pdlWait();
  __shared__ float qs[kColumnWarps * R], ks[kColumnWarps * R];
  __shared__ float part[kColumnWarps][32];
  __shared__ float squares[2][kColumnWarps];
  const int Dk = a.keyDim, Dv = a.valueDim, Hk = a.keyHeads, Hv = a.valueHeads;
  const int tiles = (Dv + 31) / 32;
  const int h = blockIdx.x / tiles;
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int j = blockIdx.x % tiles * 32 + lane;
  const int s = blockIdx.y;
  const int kh = h / (Hv / Hk);
  const bool column = j < Dv;
  float* S = a.state + (static_cast<size_t>(batch.stateSlots[s]) * Hv + h) * Dk * Dv + j;  // S[i * Dv]: row i, column j
  const bool hasState = batch.hasState[s] != 0;
  float st[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int i = w * R + r;
    st[r] = hasState && column && i < Dk ? S[static_cast<size_t>(i) * Dv] : 0.0f;
  }
  const int end = batch.seqStarts[s + 1];
  for (int t = batch.seqStarts[s]; t < end; ++t) {
    const float* qt = a.q + (static_cast<size_t>(t) * Hk + kh) * Dk;
    const float* kt = a.k + (static_cast<size_t>(t) * Hk + kh) * Dk;
    const size_t th = static_cast<size_t>(t) * Hv + h;
    float qSq = 0.0f, kSq = 0.0f;
    for (int i = threadIdx.x; i < kColumnWarps * R; i += blockDim.x) {
      const float q = i < Dk ? qt[i] : 0.0f, k = i < Dk ? kt[i] : 0.0f;
      qs[i] = q;
      ks[i] = k;
      qSq += q * q;
      kSq += k * k;
    }
    qSq = warpSum(qSq);
    kSq = warpSum(kSq);
    if (lane == 0) {
      squares[0][w] = qSq;
      squares[1][w] = kSq;
    }
    __syncthreads();
    float qTotal = 0.0f, kTotal = 0.0f;
#pragma unroll
    for (int x = 0; x < kColumnWarps; ++x) {
      qTotal += squares[0][x];
      kTotal += squares[1][x];
    }
    const float qInv = 1.0f / sqrtf(qTotal + kL2NormEps) * a.qScale;
    const float kInv = 1.0f / sqrtf(kTotal + kL2NormEps);
    const float decay = expf(a.g[th]);
    const float beta = a.beta[th];
    const float vt = column ? a.v[th * Dv + j] : 0.0f;
    float recalled = 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      st[r] *= decay;
      recalled += ks[w * R + r] * kInv * st[r];
    }
    part[w][lane] = recalled;
    __syncthreads();
    recalled = 0.0f;
#pragma unroll
    for (int x = 0; x < kColumnWarps; ++x) recalled += part[x][lane];
    const float delta = (vt - recalled) * beta;
    float o = 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      st[r] += ks[w * R + r] * kInv * delta;
      o += qs[w * R + r] * qInv * st[r];
    }
    __syncthreads();  // every warp has read part (recalled) and ks / qs
    part[w][lane] = o;
    __syncthreads();
    if (w == 0 && column) {
      float sum = 0.0f;
#pragma unroll
      for (int x = 0; x < kColumnWarps; ++x) sum += part[x][lane];
      a.out[th * Dv + j] = sum;
    }
    __syncthreads();  // part, qs and ks are rewritten by the next token
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int i = w * R + r;
    if (column && i < Dk) S[static_cast<size_t>(i) * Dv] = st[r];
  }
}

template <int R>
cudaError_t launchColumns(const GatedDeltaRuleArgs& a, const LinearBatchArgs& batch, cudaStream_t stream) {
  const dim3 grid(a.valueHeads * ((a.valueDim + 31) / 32), batch.numSeqs);
  return launchKernel(gatedDeltaRuleColumnsKernel<R>, grid, 32 * kColumnWarps, 0, stream, a, batch);
}

template <int kKeysPerLane>
cudaError_t launchRule(const GatedDeltaRuleArgs& a, const LinearBatchArgs& batch, cudaStream_t stream) {
  const int colBlocks = (a.valueDim + kWarps - 1) / kWarps;
  const dim3 grid(a.valueHeads * colBlocks, batch.numSeqs);
  return launchKernel(gatedDeltaRuleKernel<kKeysPerLane>, grid, 32 * kWarps, 0, stream, a, batch);
}

// Tier T: keys per lane T (warp kernel) or 8 T rows per thread over 4 warps (column kernel).
template <int T>
cudaError_t launchTier(const GatedDeltaRuleArgs& a, const LinearBatchArgs& batch, cudaStream_t stream) {
  static_assert(kColumnWarps * 8 == 32, "a tier is 32 key rows: 8 T rows per thread over the column kernel's warps");
  return a.columns ? launchColumns<8 * T>(a, batch, stream) : launchRule<T>(a, batch, stream);
}

}  // namespace

void gatedDeltaRule(const GatedDeltaRuleArgs& a, const LinearBatchArgs& batch, cudaStream_t stream) {
  if (batch.numSeqs == 0 || a.valueHeads == 0) return;
  if (a.keyDim < 1 || a.keyDim > kGdnMaxHeadDim || a.valueDim < 1 || a.valueDim > kGdnMaxHeadDim) {
    throw std::invalid_argument("gatedDeltaRule: head dims " + std::to_string(a.keyDim) + " x " +
                                std::to_string(a.valueDim) + " are outside [1, " + std::to_string(kGdnMaxHeadDim) + "]");
  }
  // The key dim in 32-row tiers (256 / 32 = 8 at most): the warp kernel's registers per lane
  // hold a key column, the column kernel's 4 warps 8 rows per tier each.
  cudaError_t err;
  if (a.keyDim <= 32) {
    err = launchTier<1>(a, batch, stream);
  } else if (a.keyDim <= 64) {
    err = launchTier<2>(a, batch, stream);
  } else if (a.keyDim <= 128) {
    err = launchTier<4>(a, batch, stream);
  } else {
    err = launchTier<8>(a, batch, stream);
  }
  AFD_CUDA_CHECK(err);
  AFD_CUDA_CHECK_LAUNCH(a.columns ? "gatedDeltaRuleColumnsKernel" : "gatedDeltaRuleKernel");
}

}  // namespace afd::cuda
