// NCCL loaded at run time (dlopen of libnccl.so.2): only the entry points the AFD
// connector uses, with NCCL's own C types re-declared (ABI-stable since NCCL 2.0), so
// the addon compiles where nccl.h is not installed. A missing library or symbol is an
// error naming it and what to do.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace afd::cuda::nccl {

// Opaque communicator and the 128-byte unique id (as in nccl.h).
struct ncclComm;
using ncclComm_t = ncclComm*;
constexpr size_t kUniqueIdBytes = 128;
struct ncclUniqueId {
  char internal[kUniqueIdBytes];
};

enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

// Only bytes cross the AFD wire (the byte count is known to both sides).
enum ncclDataType_t : int { ncclUint8 = 1 };

struct NcclApi {
  ncclResult_t (*getVersion)(int*) = nullptr;
  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*commAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  const char* (*getErrorString)(ncclResult_t) = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  /** NCCL version code, e.g. 22803 for 2.28.3. */
  int version = 0;
  /** Soname actually loaded. */
  std::string library;
};

// Loads NCCL once per process; throws afd::Error naming the library and the symbol.
const NcclApi& ncclApi();

// Throws afd::Error "<what> failed: <NCCL reason>" when r is not ncclSuccess.
void checkNccl(ncclResult_t r, const char* what);

}  // namespace afd::cuda::nccl
