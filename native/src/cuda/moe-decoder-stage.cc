// Split-stage exactness of the fused decoder (AFD / DBO stages). A stage of `rows` rows
// inside a step of `shapeRows` rows must compute each row exactly as the unsplit step:
// our kernels compute every output row from its own input row only, so it is enough to
// take every row-count-dependent decision for shapeRows. cuBLAS is the exception: its
// kernel (tile shape, split-K) may depend on M, so with stageExactGemm the GEMM runs at
// M = shapeRows on staged copies (the stage's rows first, stale rows after; a row's
// result does not depend on the other rows of the same kernel) and the stage's rows are
// copied out. At decode sizes these GEMMs are bound by the weight read, so M = 2 x rows
// costs about the same as M = rows.
#include <string>

#include "core/error.h"
#include "cuda/cublas-api.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/moe-decoder.h"

namespace afd::cuda {

int MoeDecoder::checkShapeRows(int rows, int shapeRows) const {
  if (shapeRows <= 0) shapeRows = rows;
  AFD_CHECK(rows >= 0 && rows <= shapeRows && shapeRows <= options_.maxBatch,
            "MoeDecoder: a stage of " << rows << " rows in a step of " << shapeRows << " rows (maxBatch "
                                      << options_.maxBatch << "): need 0 <= rows <= shapeRows <= maxBatch");
  return shapeRows;
}

void MoeDecoder::denseLinear(const LinearArgs& a, int shapeRows) {
  const CublasHandle* cublas = backend_.cublas();
  if (a.rows == 0) return;
  if (shapeRows == a.rows) {  // unsplit: the colocated path, unchanged
    linear(a, 1, cublas, stream_);
    return;
  }
  const bool accumulate = a.epilogue == Epilogue::AccumulateF32;
  const bool cublasPath = cublas != nullptr && shapeRows > kSmallRowsMax && !a.xIsF32 && a.wDtype == 2 &&
                          a.xRowIndex == nullptr && (a.epilogue == Epilogue::StoreF32 || accumulate);
  if (!cublasPath) {
    // The unsplit step takes the small-row kernel too (shapeRows <= kSmallRowsMax, or f32 x).
    AFD_CHECK(shapeRows <= kSmallRowsMax || cublas == nullptr || a.xIsF32,
              "MoeDecoder: split-stage GEMM with epilogue " << static_cast<int>(a.epilogue) << " has no exact path");
    linear(a, 1, nullptr, stream_);
    return;
  }
  if (!options_.stageExactGemm) {
    cublas->linear(a.x, a.w, a.out, CUDA_R_32F, a.rows, a.n, a.k, a.ldOut, 1.0f, accumulate ? 1.0f : 0.0f);
    return;
  }
  // x: bf16 [rows, k] -> staged [shapeRows, k]; out: f32 [rows, ldOut] <-> staged [shapeRows, n].
  const size_t xBytes = static_cast<size_t>(a.rows) * a.k * 2;
  const size_t outRowBytes = static_cast<size_t>(a.n) * 4;
  AFD_CHECK(static_cast<size_t>(shapeRows) * a.k * 2 <= stageGemmXBytes_ &&
                stageGemmXBytes_ + static_cast<size_t>(shapeRows) * outRowBytes <= stageGemm_.bytes(),
            "MoeDecoder: split-stage GEMM staging too small for " << shapeRows << " x [" << a.n << ", " << a.k << "]");
  char* x = stageGemm_.as<char>();
  char* out = x + stageGemmXBytes_;
  AFD_CUDA_CHECK(cudaMemcpyAsync(x, a.x, xBytes, cudaMemcpyDeviceToDevice, stream_));
  const size_t ldOutBytes = static_cast<size_t>(a.ldOut) * 4;
  if (accumulate) {
    AFD_CUDA_CHECK(cudaMemcpy2DAsync(out, outRowBytes, a.out, ldOutBytes, outRowBytes, a.rows, cudaMemcpyDeviceToDevice,
                                     stream_));
  }
  cublas->linear(x, a.w, out, CUDA_R_32F, shapeRows, a.n, a.k, a.n, 1.0f, accumulate ? 1.0f : 0.0f);
  AFD_CUDA_CHECK(
      cudaMemcpy2DAsync(a.out, ldOutBytes, out, outRowBytes, outRowBytes, a.rows, cudaMemcpyDeviceToDevice, stream_));
}

}  // namespace afd::cuda
