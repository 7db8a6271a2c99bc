#include "cuda/cublas-api.h"

#include <stdexcept>
#include <string>

#include "cuda/libraries.h"

namespace afd::cuda {
namespace {

// cuBLAS ABI values (cublas_api.h), stable since CUDA 11.
constexpr int kOpN = 0;
constexpr int kOpT = 1;
constexpr int kComputeF32 = 68;     // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;    // CUBLAS_GEMM_DEFAULT

using CreateFn = int (*)(void**);
using DestroyFn = int (*)(void*);
using SetStreamFn = int (*)(void*, cudaStream_t);
using SetWorkspaceFn = int (*)(void*, void*, size_t);
using GemmExFn = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                         const void*, void*, int, int, int, int);

struct CublasApi {
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn setStream = nullptr;
  SetWorkspaceFn setWorkspace = nullptr;
  GemmExFn gemmEx = nullptr;
};

template <typename Fn>
Fn require(const DynLib& lib, const char* name) {
  auto fn = lib.symbol<Fn>(name);
  if (fn == nullptr) {
    throw std::runtime_error(std::string("cuBLAS (") + lib.loadedName() + ") lacks the symbol " + name +
                             "; install cuBLAS 12 or newer");
  }
  return fn;
}

const CublasApi& api() {
  static const CublasApi loaded = [] {
    const DynLib& lib = cublasLibrary();
    if (!lib.ok()) throw std::runtime_error(lib.error() + " (cuBLAS is needed by the CUDA backend for large GEMMs)");
    CublasApi a;
    a.create = require<CreateFn>(lib, "cublasCreate_v2");
    a.destroy = require<DestroyFn>(lib, "cublasDestroy_v2");
    a.setStream = require<SetStreamFn>(lib, "cublasSetStream_v2");
    a.setWorkspace = require<SetWorkspaceFn>(lib, "cublasSetWorkspace_v2");
    a.gemmEx = require<GemmExFn>(lib, "cublasGemmEx");
    return a;
  }();
  return loaded;
}

void check(int status, const char* what) {
  if (status != 0) throw std::runtime_error(std::string("cuBLAS ") + what + " failed with status " + std::to_string(status));
}

}  // namespace

CublasHandle::CublasHandle(cudaStream_t stream, void* workspace, size_t workspaceBytes) {
  const CublasApi& a = api();
  check(a.create(&handle_), "cublasCreate");
  check(a.setStream(handle_, stream), "cublasSetStream");
  check(a.setWorkspace(handle_, workspace, workspaceBytes), "cublasSetWorkspace");
}

CublasHandle::~CublasHandle() {
  if (handle_ != nullptr) api().destroy(handle_);
}

void CublasHandle::linear(const void* x, const void* w, void* out, cudaDataType outType, int rows, int n, int k,
                          int ldOut, float alpha, float beta) const {
  // Column-major view: out^T[n, rows] = w^T... i.e. C(n x rows) = op_T(W: k x n) * X(k x rows).
  check(api().gemmEx(handle_, kOpT, kOpN, n, rows, k, &alpha, w, CUDA_R_16BF, k, x, CUDA_R_16BF, k, &beta, out,
                     static_cast<int>(outType), ldOut, kComputeF32, kGemmDefault),
        "cublasGemmEx");
}

}  // namespace afd::cuda
