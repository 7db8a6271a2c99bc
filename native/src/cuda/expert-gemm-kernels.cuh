// Small kernels around the cuBLAS expert GEMMs (expert-gemm-cublas.h): the gather of the
// permuted rows, the per-problem pointer arrays of the grouped calls, SiLU(gate) * up,
// and bf16 -> f32 widening. bf16 rows need 16-byte alignment: hidden and intermediate
// must be multiples of 8 (checked by the caller).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// out[r, :] = bf16(x[src[r], :]); x: [*, cols] f32 or bf16, out: [rows, cols] bf16.
void gatherRowsToBf16(const void* x, bool xIsF32, const int32_t* src, int rows, int cols, void* out,
                      cudaStream_t stream);

// act[r, j] = bf16(silu(gu[r, j]) * gu[r, inter + j]); gu: [rows, 2 * inter] bf16.
void siluMulBf16(const void* gu, int rows, int inter, void* act, cudaStream_t stream);

// out[i] = f32(in[i]), count elements; in and out 16-byte aligned.
void widenBf16ToF32(const void* in, size_t count, float* out, cudaStream_t stream);

// Expert weights: a device table [3 * numExperts] of pointers (gate | up | down), or bases
// with a per-expert stride in elements (then table is null).
struct ExpertWeightsView {
  const void* const* table = nullptr;
  const void* gate = nullptr;  // [E, inter, hidden] bf16
  const void* up = nullptr;    // [E, inter, hidden] bf16
  const void* down = nullptr;  // [E, hidden, inter] bf16
  int64_t expertStride = 0;    // elements between experts (inter * hidden)
};

// Pointer arrays of the two grouped calls, problem i of active expert e = activeExperts[i]
// (i < numActive, the host's count of experts with rows), rows [o, o') = expertOffsets[e..e+1]:
//   gate/up (2 problems per expert): x = xPerm + o*hidden; w = gate_e, up_e;
//                                    out = gu + o*2*inter (+ inter for up)
//   down    (1 problem per expert):  x = act + o*inter; w = down_e; out = outRows + o*hidden
// Traps when the device permutation disagrees with numActive (stale host counts).
struct ExpertPointerArrays {
  const void** guX = nullptr;  // [2 * numActive] each
  const void** guW = nullptr;
  void** guOut = nullptr;
  const void** downX = nullptr;  // [numActive] each
  const void** downW = nullptr;
  void** downOut = nullptr;
};
void buildExpertPointers(const int32_t* expertOffsets, const int32_t* activeExperts, int numActive, int numExperts,
                         const ExpertWeightsView& weights, const void* xPerm, void* gu, const void* act,
                         void* outRows, int hidden, int inter, const ExpertPointerArrays& arrays, cudaStream_t stream);

}  // namespace afd::cuda
