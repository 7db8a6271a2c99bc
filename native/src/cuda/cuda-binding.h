// N-API exports of the CUDA backend's test and benchmark entry points:
//   cudaConformance({ device?, seed? }) -> ConformanceCase[]
//   cudaDecodeBench(spec, { batches?, context?, warmupSteps?, timedSteps?, seed?, device?, kvMemoryFraction? })
//   cudaDecoderGenerate(spec, { promptIds, maxNewTokens, graphs?, device? }) -> { tokens, logits }
//   cudaExpertGemmBench({ batches?, numExperts?, hidden?, intermediate?, topK?, ... }) -> expert GEMM timings
// Registered in every build; in builds without CUDA they throw a clear error.
#pragma once
#include <napi.h>

namespace afd::cuda {

#ifdef AFD_WITH_CUDA
void registerCudaExports(Napi::Env env, Napi::Object exports);
#else
inline Napi::Value cudaNotBuilt(const Napi::CallbackInfo& info) {
  Napi::Error::New(info.Env(),
                   "this addon was built without CUDA (AFD_CUDA=off or no nvcc); rebuild with AFD_CUDA=on on a "
                   "machine with the CUDA toolkit to run GPU tests and benchmarks")
      .ThrowAsJavaScriptException();
  return info.Env().Undefined();
}
inline void registerCudaExports(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaConformance", Napi::Function::New(env, cudaNotBuilt, "cudaConformance"));
  exports.Set("cudaDecodeBench", Napi::Function::New(env, cudaNotBuilt, "cudaDecodeBench"));
  exports.Set("cudaDecoderGenerate", Napi::Function::New(env, cudaNotBuilt, "cudaDecoderGenerate"));
  exports.Set("cudaExpertGemmBench", Napi::Function::New(env, cudaNotBuilt, "cudaExpertGemmBench"));
}
#endif

}  // namespace afd::cuda
