#include "cuda/embedding.cuh"

#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"
#include "cuda/launch.cuh"

namespace afd::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void embeddingKernel(const int32_t* ids, const void* table, int dtype, float* out, int hidden, int vocab) {
  pdlWait();
  const int row = blockIdx.x;
  const int id = ids[row];
  float* dst = out + static_cast<size_t>(row) * hidden;
  const bool ok = id >= 0 && id < vocab;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    dst[i] = ok ? loadAsFloat(table, dtype, static_cast<size_t>(id) * hidden + i) : __int_as_float(0x7fc00000);
  }
}

}  // namespace

void embeddingLookup(const int32_t* ids, const void* table, int tableDtype, float* out, int rows, int hidden, int vocab,
                     cudaStream_t stream) {
  if (rows == 0) return;
  AFD_CUDA_CHECK(launchKernel(embeddingKernel, rows, kThreads, 0, stream, ids, table, tableDtype, out, hidden, vocab));
  AFD_CUDA_CHECK_LAUNCH("embeddingKernel");
}

}  // namespace afd::cuda
