// The arguments of one linear layer or grouped (per-expert) GEMM (see cuda/gemm.cuh),
// kept free of CUDA headers so host code and host-only tests can build them.
#pragma once
#include <cstdint>

namespace afd::cuda {

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
  int shapeRows = 0;  // dense: rows the cuBLAS-or-ours choice is made for (0 = rows; a DBO stage passes the step's)
  int n = 0;     // output features
  int k = 0;     // input features
  void* out = nullptr;
  int ldOut = 0;  // row stride of out, elements
  Epilogue epilogue = Epilogue::StoreBf16;
};

// The down projection of a SiLU-gated MLP, in the form the gate/up GEMM names its gate:
// a pointer table when gateUp has one, else `weight` (+ the same group stride: gate
// [n, k] and down [k, n] hold as many elements).
struct DownWeights {
  const void* weight = nullptr;
  const void* const* table = nullptr;
  int dtype = 2;  // afd::DType code
  bool outBf16 = false;  // the down output in bf16 (bf16 activations) instead of f32
};

// The down GEMM after `gateUp` (epilogue SiluMulBf16 or SiluMulF32): reads gateUp's output
// [rows, n] in the epilogue's dtype, keeps its groups and rows, writes [rows, k] to out
// (f32, or bf16 with down.outBf16).
inline LinearArgs gatedMlpDownArgs(const LinearArgs& gateUp, const DownWeights& down, void* out) {
  LinearArgs d = gateUp;
  d.x = gateUp.out;
  d.xIsF32 = gateUp.epilogue == Epilogue::SiluMulF32;
  d.xRowIndex = nullptr;
  d.w = down.weight;
  d.wUp = nullptr;
  d.wTable = down.table;
  d.wUpTable = nullptr;
  d.wDtype = down.dtype;
  d.n = gateUp.k;
  d.k = gateUp.n;
  d.out = out;
  d.ldOut = gateUp.k;
  d.epilogue = down.outBf16 ? Epilogue::StoreBf16 : Epilogue::StoreF32;
  return d;
}

}  // namespace afd::cuda
