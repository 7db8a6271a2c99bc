// N-API export of the CUDA backend's op conformance suite (the GPU test suite runs it):
//   cudaConformance({ device?, seed?, family? }) -> ConformanceCase[]
// Registered in every build; in builds without CUDA it throws a clear error. Benchmarks
// drive the product's Engine (afd-bench decode), never a path of their own.
#pragma once
#include <napi.h>

namespace afd::cuda {

#ifdef AFD_WITH_CUDA
void registerConformanceExports(Napi::Env env, Napi::Object exports);
#else
inline Napi::Value cudaNotBuilt(const Napi::CallbackInfo& info) {
  Napi::Error::New(info.Env(),
                   "this addon was built without CUDA (AFD_CUDA=off or no nvcc); rebuild with AFD_CUDA=on on a "
                   "machine with the CUDA toolkit to run the GPU tests")
      .ThrowAsJavaScriptException();
  return info.Env().Undefined();
}
inline void registerConformanceExports(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaConformance", Napi::Function::New(env, cudaNotBuilt, "cudaConformance"));
}
#endif

}  // namespace afd::cuda
