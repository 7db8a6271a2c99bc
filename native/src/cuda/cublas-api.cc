#include "cuda/cublas-api.h"

#include <stdexcept>
#include <string>

#include "cuda/libraries.h"

namespace afd::cuda {
namespace {

// cuBLAS ABI values (cublas_api.h), unchanged from cuBLAS 11 through 13.
constexpr int kOpN = 0;
constexpr int kOpT = 1;
constexpr int kComputeF32 = 68;     // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;    // CUBLAS_GEMM_DEFAULT

using CreateFn = int (*)(void**);
using DestroyFn = int (*)(void*);
using SetStreamFn = int (*)(void*, cudaStream_t);
using SetWorkspaceFn = int (*)(void*, void*, size_t);
using GetPropertyFn = int (*)(int, int*);  // (libraryPropertyType MAJOR=0 MINOR=1 PATCH=2, int*)
// cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
//              computeType, algo)
using GemmExFn = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                         const void*, void*, int, int, int, int);
// cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
//                            strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo)
using GemmStridedBatchedExFn = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, long long,
                                       const void*, int, int, long long, const void*, void*, int, int, long long, int,
                                       int, int);
// cublasGemmBatchedEx: only its presence is reported (cublasInfo).
// cublasGemmGroupedBatchedEx(handle, transa[], transb[], m[], n[], k[], alpha[], Aarray, Atype, lda[], Barray,
//                            Btype, ldb[], beta[], Carray, Ctype, ldc[], groupCount, groupSize[], computeType);
// every array but A/B/Carray is on the host, [groupCount] long.
using GemmGroupedBatchedExFn = int (*)(void*, const int*, const int*, const int*, const int*, const int*, const void*,
                                       const void* const*, int, const int*, const void* const*, int, const int*,
                                       const void*, void* const*, int, const int*, int, const int*, int);

struct CublasApi {
  std::string soname;
  std::string version;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn setStream = nullptr;
  SetWorkspaceFn setWorkspace = nullptr;
  GemmExFn gemmEx = nullptr;
  // Optional: null when this cuBLAS lacks them.
  GemmStridedBatchedExFn gemmStridedBatchedEx = nullptr;
  GemmGroupedBatchedExFn gemmGroupedBatchedEx = nullptr;
  bool hasGemmBatchedEx = false;
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

std::string versionOf(const DynLib& lib) {
  auto getProperty = lib.symbol<GetPropertyFn>("cublasGetProperty");
  if (getProperty == nullptr) return "";
  int parts[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i)
    if (getProperty(i, &parts[i]) != 0) return "";
  return std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]);
}

const CublasApi& api() {
  static const CublasApi loaded = [] {
    const DynLib& lib = cublasLibrary();
    if (!lib.ok()) throw std::runtime_error(lib.error() + " (cuBLAS is needed by the CUDA backend for large GEMMs)");
    CublasApi a;
    a.soname = lib.loadedName();
    a.version = versionOf(lib);
    a.create = require<CreateFn>(lib, "cublasCreate_v2");
    a.destroy = require<DestroyFn>(lib, "cublasDestroy_v2");
    a.setStream = require<SetStreamFn>(lib, "cublasSetStream_v2");
    a.setWorkspace = require<SetWorkspaceFn>(lib, "cublasSetWorkspace_v2");
    a.gemmEx = require<GemmExFn>(lib, "cublasGemmEx");
    a.gemmStridedBatchedEx = lib.symbol<GemmStridedBatchedExFn>("cublasGemmStridedBatchedEx");
    a.gemmGroupedBatchedEx = lib.symbol<GemmGroupedBatchedExFn>("cublasGemmGroupedBatchedEx");
    a.hasGemmBatchedEx = lib.rawSymbol("cublasGemmBatchedEx") != nullptr;
    return a;
  }();
  return loaded;
}

// The optional entry point `fn`, or an error naming the symbol and the cuBLAS that lacks it.
template <typename Fn>
Fn optional(Fn fn, const char* name, const char* since) {
  if (fn == nullptr) {
    const CublasApi& a = api();
    throw std::runtime_error(std::string("cuBLAS ") + (a.version.empty() ? "(unknown version)" : a.version) + " (" +
                             a.soname + ") lacks the symbol " + name + ", added in cuBLAS " + since +
                             "; install a newer cuBLAS or keep our expert GEMM kernel (expertGemm \"ours\", AFD_EXPERT_GEMM=ours)");
  }
  return fn;
}

// cublasStatus_t names (cublas_api.h).
const char* statusName(int status) {
  switch (status) {
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown status";
  }
}

void check(int status, const char* what) {
  if (status != 0) {
    throw std::runtime_error(std::string("cuBLAS ") + what + " failed with status " + std::to_string(status) + " (" +
                             statusName(status) + ")");
  }
}

}  // namespace

CublasInfo cublasInfo() {
  const CublasApi& a = api();
  CublasInfo info;
  info.soname = a.soname;
  info.version = a.version;
  info.groupedBatchedEx = a.gemmGroupedBatchedEx != nullptr;
  info.batchedEx = a.hasGemmBatchedEx;
  info.stridedBatchedEx = a.gemmStridedBatchedEx != nullptr;
  return info;
}

void GroupedGemmPlan::clear() {
  for (auto* v : {&transA_, &transB_, &m_, &n_, &k_, &lda_, &ldb_, &ldc_, &groupSize_}) v->clear();
  alpha_.clear();
  beta_.clear();
  problems_ = 0;
}

void GroupedGemmPlan::add(int rows, int n, int k, int ldOut, int count) {
  if (rows <= 0 || n <= 0 || k <= 0 || count <= 0 || ldOut < n) {
    throw std::invalid_argument("grouped GEMM: bad group rows=" + std::to_string(rows) + " n=" + std::to_string(n) +
                                " k=" + std::to_string(k) + " ldOut=" + std::to_string(ldOut) +
                                " count=" + std::to_string(count));
  }
  // Column-major view as in linear(): C(n x rows) = op_T(W: k x n) * X(k x rows).
  transA_.push_back(kOpT);
  transB_.push_back(kOpN);
  m_.push_back(n);
  n_.push_back(rows);
  k_.push_back(k);
  lda_.push_back(k);
  ldb_.push_back(k);
  ldc_.push_back(ldOut);
  groupSize_.push_back(count);
  alpha_.push_back(1.0f);
  beta_.push_back(0.0f);
  problems_ += count;
}

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

void CublasHandle::groupedLinear(const GroupedGemmPlan& p, const void* const* xPtrs, const void* const* wPtrs,
                                 void* const* outPtrs) const {
  auto fn = optional(api().gemmGroupedBatchedEx, "cublasGemmGroupedBatchedEx", "12.5");
  if (p.groups() == 0) return;
  check(fn(handle_, p.transA_.data(), p.transB_.data(), p.m_.data(), p.n_.data(), p.k_.data(), p.alpha_.data(), wPtrs,
           CUDA_R_16BF, p.lda_.data(), xPtrs, CUDA_R_16BF, p.ldb_.data(), p.beta_.data(), outPtrs, CUDA_R_16BF,
           p.ldc_.data(), p.groups(), p.groupSize_.data(), kComputeF32),
        "cublasGemmGroupedBatchedEx");
}

}  // namespace afd::cuda
