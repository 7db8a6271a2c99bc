// Kernels of the linear-attention ops (Qwen3-Next / Qwen3.5 Gated DeltaNet; core/backend.h,
// "linear attention"; the launchers behind cuda/linear-attention-ops.h). Activations are
// f32; weights any float dtype (codes of cuda/dtype-load.cuh). The batch arrays stay on
// the device and only the kernels read them, so every launcher is graph-capturable:
// no host synchronization, no allocation.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// Widest conv kernel (W) and largest delta-rule head dims (Dk, Dv) the kernels take.
constexpr int kConvMaxWidth = 8;
constexpr int kGdnMaxHeadDim = 256;

// core/linear-attention-ops.h's batch: device arrays and the host-side count.
struct LinearBatchArgs {
  const int32_t* seqStarts = nullptr;   // [S + 1]
  const int32_t* stateSlots = nullptr;  // [S]
  const int32_t* hasState = nullptr;    // [S]
  int numSeqs = 0;                      // S
};

// x, out (may alias x): [T, channels]; weight: [channels, width]; convState:
// [numSlots, channels, width - 1] (in/out). width in [1, kConvMaxWidth].
void causalConv1d(const float* x, const void* weight, int weightDtype, float* convState, const LinearBatchArgs& batch,
                  float* out, int channels, int width, cudaStream_t stream);

struct GatedDeltaRuleArgs {
  const float* q = nullptr;     // [T, keyHeads, keyDim]
  const float* k = nullptr;     // [T, keyHeads, keyDim]
  const float* v = nullptr;     // [T, valueHeads, valueDim]
  const float* g = nullptr;     // [T, valueHeads] log decay
  const float* beta = nullptr;  // [T, valueHeads]
  float* state = nullptr;       // [numSlots, valueHeads, keyDim, valueDim] (in/out)
  float* out = nullptr;         // [T, valueHeads, valueDim]
  int keyHeads = 0, valueHeads = 0, keyDim = 0, valueDim = 0;
  float qScale = 1.0f;          // 1 / sqrt(keyDim), computed on the host as the CPU op does
  // The kernel: a warp per value column (reads a column of the state, rows apart; fastest
  // for long sequences, whose tokens need only warp reductions) or a column per lane (each
  // state row read whole; block reductions per token: decode-shaped batches).
  bool columns = false;
};

// keyDim, valueDim in [1, kGdnMaxHeadDim].
void gatedDeltaRule(const GatedDeltaRuleArgs& a, const LinearBatchArgs& batch, cudaStream_t stream);

// x, z, out (may alias x): [rows, dim]; weight: [dim].
void rmsNormGated(const float* x, const float* z, const void* weight, int weightDtype, float eps, float* out, int rows,
                  int dim, cudaStream_t stream);

// a, b, g, beta: [rows, heads]; aLog, dtBias: [heads].
void gdnGating(const float* a, const float* b, const void* aLog, int aLogDtype, const void* dtBias, int dtBiasDtype,
               float* g, float* beta, int rows, int heads, cudaStream_t stream);

// Column ranges of x [rows, columns] into outs[i] [rows, widths[i]] (widths sum to columns).
struct SplitColumnsArgs {
  float* outs[4] = {nullptr, nullptr, nullptr, nullptr};
  int begins[5] = {0, 0, 0, 0, 0};  // column where out i starts; begins[numOuts] = columns
  int numOuts = 0;
};
void splitColumns(const float* x, const SplitColumnsArgs& a, int64_t rows, cudaStream_t stream);

}  // namespace afd::cuda
