// Linear layers and grouped (per-expert) GEMMs, fp32 accumulation.
//
// Plain:  out[r, o] = x[src(r), :] . W_g[o, :]                      o < n
// SiLU:   out[r, j] = silu(x[src(r)] . Gate_g[j]) * (x[src(r)] . Up_g[j])   j < n
// x: [*, k] bf16 or f32 (read through xRowIndex when given: the MoE dispatch gather).
// W_g: [n, k] of group g (HF [out, in] layout), from a device pointer table or
// w + g * groupStride. Groups own contiguous row ranges [groupOffsets[g], groupOffsets[g+1])
// of x/out; activeGroups[slot] names the group a grid slot works on (-1 idle), so the
// grid depends only on the batch size and the launch can live in a CUDA graph.
//
// bf16 weights with k % 8 == 0 run on a tensor-core kernel that streams each weight row
// once for all rows of its group (mma.sync m16n8k16 with the weights as the M operand);
// large dense row counts go to cuBLAS; anything else to a simple exact kernel.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

class CublasHandle;

enum class Epilogue : int {
  StoreBf16 = 0,      // out bf16 = acc
  StoreF32 = 1,       // out f32 = acc
  AccumulateF32 = 2,  // out f32 += acc (residual add)
  SiluMulBf16 = 3,    // out bf16 = silu(gate) * up
  SiluMulF32 = 4,     // out f32 = silu(gate) * up
};

struct LinearArgs {
  const void* x = nullptr;
  bool xIsF32 = false;                 // else bf16
  const int32_t* xRowIndex = nullptr;  // [rows] source row of x, or null for identity
  const void* w = nullptr;             // group 0 weight (or base of contiguous groups)
  const void* wUp = nullptr;           // SiLU: up weight of group 0 (w is the gate)
  const void* const* wTable = nullptr;    // [numGroups] device pointers; overrides w
  const void* const* wUpTable = nullptr;  // [numGroups] device pointers; overrides wUp
  int64_t groupStride = 0;             // elements between groups when no table is given
  int wDtype = 2;                      // afd::DType code of the weights (2 = bf16)
  const int32_t* groupOffsets = nullptr;  // [numGroups + 1], or null: one group of `rows` rows
  const int32_t* activeGroups = nullptr;  // [gridSlots], or null: slot s = group s
  int rows = 0;  // rows of out (dense); grouped: unused (offsets decide)
  int n = 0;     // output features
  int k = 0;     // input features
  void* out = nullptr;
  int ldOut = 0;  // row stride of out, elements
  Epilogue epilogue = Epilogue::StoreBf16;
};

// Dense row counts above which cuBLAS takes over (when a handle is given).
constexpr int kSmallRowsMax = 48;

void linear(const LinearArgs& args, int gridSlots, const CublasHandle* cublas, cudaStream_t stream);

}  // namespace afd::cuda
