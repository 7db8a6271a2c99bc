// N-API export of the AFD-on-GPUs benchmark (one role per process):
//   afdGpuBench(spec, { role, host?, port?, device?, transports?, pingBytes?, pingIters?,
//               graphRounds?, graphReplays?, batches?, dboMinBatch?, context?, warmupSteps?,
//               timedSteps?, seed?, stepDeadlineMs?, rendezvousTimeoutMs?, faultTest?, ncclEnv? })
//     -> JSON string (attention: the report; ffn: what it served)
//   afdSplitStageCheck(spec, { rows, exactGemm?, steps?, context?, seed?, device? }) -> result
//     (a split decode step on one GPU vs the unsplit one; cuda/decoder-check.h)
// Registered in every build; without CUDA it throws a clear error.
#pragma once
#include <napi.h>

namespace afd::cuda {

#ifdef AFD_WITH_CUDA
void registerAfdGpuExports(Napi::Env env, Napi::Object exports);
#else
inline Napi::Value afdGpuNotBuilt(const Napi::CallbackInfo& info) {
  Napi::Error::New(info.Env(),
                   "afdGpuBench: this addon was built without CUDA (AFD_CUDA=off or no nvcc); rebuild with AFD_CUDA=on "
                   "on a machine with the CUDA toolkit")
      .ThrowAsJavaScriptException();
  return info.Env().Undefined();
}
inline void registerAfdGpuExports(Napi::Env env, Napi::Object exports) {
  exports.Set("afdGpuBench", Napi::Function::New(env, afdGpuNotBuilt, "afdGpuBench"));
  exports.Set("afdSplitStageCheck", Napi::Function::New(env, afdGpuNotBuilt, "afdSplitStageCheck"));
}
#endif

}  // namespace afd::cuda
