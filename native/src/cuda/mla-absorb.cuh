// The two absorbed-weight products of MLA decode and prefill (mla-attention.cuh steps 1
// and 3), written as bandwidth kernels: every thread issues all of its weight loads
// before it sums, so a head's W_UK / W_UV slice streams at memory speed instead of one
// dependent load at a time.
//   absorb:  qLatent[t, h, :L] = q_nope[t, h] W_UK_h     (W_UK_h: kvB rows h*(N+V) + d, d < N)
//            qLatent[t, h, L:] = q_pe[t, h]
//   output:  out[t, h, j] = latent[t, h] . W_UV_h[j]      (W_UV_h: kvB rows h*(N+V) + N + j)
//            where latent[t, h] merges the partials of the token's context chunks.
// Each value's summation order depends only on the shapes (never on the token count), so
// a DBO stage computes every token bit for bit as the whole step does.
#pragma once
#include <cuda_runtime.h>

#include "cuda/mla-attention.cuh"

namespace afd::cuda {

// Chunking of one token's context [0, ctx): chunks of chunkLen positions (a multiple of
// kMlaQuantum), at most maxChunks of them, none empty. numChunks = 0 for ctx < 1.
__device__ __forceinline__ void mlaTokenChunks(int ctx, int maxChunks, int& chunkLen, int& numChunks) {
  if (ctx < 1 || maxChunks < 1) {
    chunkLen = 0;
    numChunks = 0;
    return;
  }
  const int quanta = (ctx + kMlaQuantum - 1) / kMlaQuantum;
  const int per = (quanta + maxChunks - 1) / maxChunks;
  chunkLen = per * kMlaQuantum;
  numChunks = (quanta + per - 1) / per;
}

void mlaAbsorbQ(const MlaAttentionArgs& a, cudaStream_t stream);
void mlaLatentOut(const MlaAttentionArgs& a, cudaStream_t stream);

}  // namespace afd::cuda
