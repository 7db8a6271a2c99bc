// The dense SiLU-gated MLP on CUDA (dense layers, DeepSeek's shared experts): few rows on
// our stream GEMM with the SiLU epilogue (cuda/gemm.cuh), many bf16 rows on cuBLAS.
#include "core/op-contracts.h"
#include "cuda/cublas-api.h"
#include "cuda/cuda-backend.h"
#include "cuda/expert-gemm-kernels.cuh"
#include "cuda/gemm.cuh"
#include "cuda/host-helpers.h"

namespace afd::cuda {

void CudaBackend::siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1), I = gate.dim(0);
  contract::checkSiluGatedMlp(x, gate, up, down, out);
  AFD_CHECK(gate.dtype == up.dtype && gate.dtype == down.dtype, "siluGatedMlp: gate, up and down must share a dtype");
  if (T == 0) return;
  const bool bf16 = x.dtype == DType::BF16;
  DownWeights d{down.data, nullptr, code(down.dtype)};
  d.outBf16 = out.dtype == DType::BF16;
  if (bf16 && cublas_ && gate.dtype == DType::BF16 && shapeRows(T) > kSmallRowsMax && I % 8 == 0) {
    // Many rows (DeepSeek's shared experts at batch 64, prefill): gate and up on cuBLAS into
    // one [T, 2I] buffer, SiLU(gate) * up, then the down projection (cuBLAS too).
    char* buf = static_cast<char*>(scratch(align256(static_cast<size_t>(T * I) * 2) + static_cast<size_t>(T * 2 * I) * 2));
    void* act = buf;
    char* gu = buf + align256(static_cast<size_t>(T * I) * 2);
    const int rows = static_cast<int>(T), n = static_cast<int>(I), k = static_cast<int>(H);
    cublas_->linear(x.data, gate.data, gu, CUDA_R_16BF, rows, n, k, 2 * n, 1.0f, 0.0f);
    cublas_->linear(x.data, up.data, gu + static_cast<size_t>(I) * 2, CUDA_R_16BF, rows, n, k, 2 * n, 1.0f, 0.0f);
    siluMulBf16(gu, rows, n, act, stream_);
    cublas_->linear(act, down.data, out.data, d.outBf16 ? CUDA_R_16BF : CUDA_R_32F, rows, k, n, k, 1.0f, 0.0f);
    return;
  }
  void* act = scratch(static_cast<size_t>(T * I) * (bf16 ? 2 : 4));
  LinearArgs a;
  a.x = x.data;
  a.xIsF32 = !bf16;
  a.w = gate.data;
  a.wUp = up.data;
  a.wDtype = code(gate.dtype);
  a.rows = static_cast<int>(T);
  a.n = static_cast<int>(I);
  a.k = static_cast<int>(H);
  a.out = act;
  a.ldOut = static_cast<int>(I);
  a.epilogue = bf16 ? Epilogue::SiluMulBf16 : Epilogue::SiluMulF32;
  a.shapeRows = static_cast<int>(shapeRows(T));
  gatedMlp(a, d, out.data, 1, cublas_.get(), stream_);
}

}  // namespace afd::cuda
