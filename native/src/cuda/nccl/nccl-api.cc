#include "cuda/nccl/nccl-api.h"

#include <type_traits>

#include "core/error.h"
#include "cuda/libraries.h"

namespace afd::cuda::nccl {
namespace {

NcclApi load() {
  const DynLib& lib = ncclLibrary();
  AFD_CHECK(lib.ok(), lib.error() << "; NCCL is needed for the GPU data plane (install libnccl2 or put libnccl.so.2 on "
                                     "LD_LIBRARY_PATH), or use the TCP data plane");
  NcclApi api;
  api.library = lib.loadedName();
  auto need = [&](auto& fn, const char* name) {
    fn = lib.symbol<std::remove_reference_t<decltype(fn)>>(name);
    AFD_CHECK(fn != nullptr, "NCCL (" << api.library << ") has no symbol " << name << "; NCCL >= 2.7 is required");
  };
  need(api.getVersion, "ncclGetVersion");
  need(api.getUniqueId, "ncclGetUniqueId");
  need(api.commInitRank, "ncclCommInitRank");
  need(api.commDestroy, "ncclCommDestroy");
  need(api.commAbort, "ncclCommAbort");
  need(api.commGetAsyncError, "ncclCommGetAsyncError");
  need(api.getErrorString, "ncclGetErrorString");
  need(api.send, "ncclSend");
  need(api.recv, "ncclRecv");
  need(api.groupStart, "ncclGroupStart");
  need(api.groupEnd, "ncclGroupEnd");
  AFD_CHECK(api.getVersion(&api.version) == ncclSuccess, "ncclGetVersion failed in " << api.library);
  return api;
}

}  // namespace

const NcclApi& ncclApi() {
  static const NcclApi api = load();
  return api;
}

void checkNccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  const NcclApi& api = ncclApi();
  throw Error(std::string(what) + " failed: " + api.getErrorString(r) + " (NCCL error " + std::to_string(r) +
              "; set NCCL_DEBUG=WARN in ncclEnv for details)");
}

}  // namespace afd::cuda::nccl
