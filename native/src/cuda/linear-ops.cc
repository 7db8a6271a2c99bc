#include "cuda/linear-ops.h"

#include "core/op-contracts.h"
#include "cuda/cublas-api.h"
#include "cuda/elementwise.cuh"
#include "cuda/expert-gemm-kernels.cuh"
#include "cuda/gemm.cuh"
#include "cuda/host-helpers.h"

namespace afd::cuda {

namespace {
constexpr size_t kCublasWorkspaceBytes = 32u << 20;
}  // namespace

LinearOps::LinearOps(StreamContext& ctx, DeviceMemory& memory) : ctx_(ctx), memory_(memory) {
  try {
    cublasWorkspace_ = DeviceBuffer("cuBLAS workspace", kCublasWorkspaceBytes);
    cublas_ = std::make_unique<CublasHandle>(ctx.stream(), cublasWorkspace_.data(), cublasWorkspace_.bytes());
  } catch (const std::exception& e) {
    cublasError_ = e.what();  // our kernels cover every GEMM; cuBLAS only speeds up large ones
  }
}

LinearOps::~LinearOps() = default;

void LinearOps::linearInto(const Tensor& x, const Tensor& w, Tensor& out, bool accumulate) {
  const int64_t T = x.dim(0), K = x.dim(1), N = w.dim(0);
  LinearArgs a;
  a.x = x.data;
  a.xIsF32 = x.dtype == DType::F32;
  a.w = w.data;
  a.wDtype = code(w.dtype);
  a.rows = static_cast<int>(T);
  a.n = static_cast<int>(N);
  a.k = static_cast<int>(K);
  a.out = out.data;
  a.ldOut = static_cast<int>(N);
  a.epilogue = accumulate ? Epilogue::AccumulateF32 : Epilogue::StoreF32;
  a.shapeRows = static_cast<int>(ctx_.shapeRows(T));
  const bool many = ctx_.shapeRows(T) > kSmallRowsMax && cublas_ && w.dtype == DType::BF16;
  if (many && a.xIsF32 && accumulate) {
    // A projection into the residual (o_proj): its input rounded to bf16 like every
    // activation, one cuBLAS GEMM with beta = 1.
    void* xb = memory_.scratch(static_cast<size_t>(T * K) * 2);
    convertF32ToBf16(x.ptr<float>(), xb, T * K, ctx_.stream());
    a.x = xb;
    a.xIsF32 = false;
    linear(a, 1, cublas_.get(), ctx_.stream());
  } else if (many && a.xIsF32) {
    // cuBLAS takes bf16 activations: x = hi + lo, two GEMMs accumulate (near-f32 accuracy).
    char* parts = static_cast<char*>(memory_.scratch(static_cast<size_t>(T * K) * 4));
    void* hi = parts;
    void* lo = parts + static_cast<size_t>(T * K) * 2;
    splitF32ToBf16(x.ptr<float>(), hi, lo, T * K, ctx_.stream());
    cublas_->linear(hi, w.data, out.data, CUDA_R_32F, static_cast<int>(T), static_cast<int>(N), static_cast<int>(K),
                    static_cast<int>(N), 1.0f, 0.0f);
    cublas_->linear(lo, w.data, out.data, CUDA_R_32F, static_cast<int>(T), static_cast<int>(N), static_cast<int>(K),
                    static_cast<int>(N), 1.0f, 1.0f);
  } else {
    linear(a, 1, many ? cublas_.get() : nullptr, ctx_.stream());
  }
}

void LinearOps::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  contract::checkMatmul(x, w, bias, out);
  if (x.dim(0) == 0) return;
  linearInto(x, w, out, false);
  if (bias) addBiasRows(out.ptr<float>(), bias->data, code(bias->dtype), static_cast<int>(x.dim(0)), static_cast<int>(w.dim(0)), ctx_.stream());
}

void LinearOps::matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  contract::checkMatmul(x, w, bias, out);
  if (x.dim(0) == 0) return;
  linearInto(x, w, out, true);
  if (bias) addBiasRows(out.ptr<float>(), bias->data, code(bias->dtype), static_cast<int>(x.dim(0)), static_cast<int>(w.dim(0)), ctx_.stream());
}



void LinearOps::siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1), I = gate.dim(0);
  contract::checkSiluGatedMlp(x, gate, up, down, out);
  AFD_CHECK(gate.dtype == up.dtype && gate.dtype == down.dtype, "siluGatedMlp: gate, up and down must share a dtype");
  if (T == 0) return;
  const bool bf16 = x.dtype == DType::BF16;
  DownWeights d{down.data, nullptr, code(down.dtype)};
  d.outBf16 = out.dtype == DType::BF16;
  if (bf16 && cublas_ && gate.dtype == DType::BF16 && ctx_.shapeRows(T) > kSmallRowsMax && I % 8 == 0) {
    // Many rows (DeepSeek's shared experts at batch 64, prefill): gate and up on cuBLAS into
    // one [T, 2I] buffer, SiLU(gate) * up, then the down projection (cuBLAS too).
    char* buf = static_cast<char*>(memory_.scratch(align256(static_cast<size_t>(T * I) * 2) + static_cast<size_t>(T * 2 * I) * 2));
    void* act = buf;
    char* gu = buf + align256(static_cast<size_t>(T * I) * 2);
    const int rows = static_cast<int>(T), n = static_cast<int>(I), k = static_cast<int>(H);
    cublas_->linear(x.data, gate.data, gu, CUDA_R_16BF, rows, n, k, 2 * n, 1.0f, 0.0f);
    cublas_->linear(x.data, up.data, gu + static_cast<size_t>(I) * 2, CUDA_R_16BF, rows, n, k, 2 * n, 1.0f, 0.0f);
    siluMulBf16(gu, rows, n, act, ctx_.stream());
    cublas_->linear(act, down.data, out.data, d.outBf16 ? CUDA_R_16BF : CUDA_R_32F, rows, k, n, k, 1.0f, 0.0f);
    return;
  }
  void* act = memory_.scratch(static_cast<size_t>(T * I) * (bf16 ? 2 : 4));
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
  a.shapeRows = static_cast<int>(ctx_.shapeRows(T));
  gatedMlp(a, d, out.data, 1, cublas_.get(), ctx_.stream());
}

}  // namespace afd::cuda
