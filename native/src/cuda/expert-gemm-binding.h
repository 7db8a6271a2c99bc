// N-API entry of the expert GEMM benchmark (expert-gemm-bench.h), registered by
// cuda-binding.cc as cudaExpertGemmBench(options?) -> result object (see
// native/src/index.ts CudaExpertGemmBenchResult for the fields).
#pragma once
#include <napi.h>

namespace afd::cuda {

Napi::Value cudaExpertGemmBench(const Napi::CallbackInfo& info);

}  // namespace afd::cuda
