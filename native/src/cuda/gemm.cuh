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

#include "cuda/linear-args.h"

namespace afd::cuda {

class CublasHandle;

// Dense row counts above which cuBLAS takes over (when a handle is given).
constexpr int kSmallRowsMax = 48;

void linear(const LinearArgs& args, int gridSlots, const CublasHandle* cublas, cudaStream_t stream);

// A SiLU-gated MLP: gateUp (a SiluMul epilogue into its out, the activations), then the
// down projection of those activations (gatedMlpDownArgs) into out.
inline void gatedMlp(const LinearArgs& gateUp, const DownWeights& down, void* out, int gridSlots,
                     const CublasHandle* cublas, cudaStream_t stream) {
  linear(gateUp, gridSlots, cublas, stream);
  linear(gatedMlpDownArgs(gateUp, down, out), gridSlots, cublas, stream);
}

}  // namespace afd::cuda
