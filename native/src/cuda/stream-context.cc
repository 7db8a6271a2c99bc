#include "cuda/stream-context.h"

#include <string>

#include "core/error.h"
#include "cuda/cuda-check.h"
#include "cuda/step-graph.h"

namespace afd::cuda {

StreamContext::StreamContext(int deviceIndex, const CudaOptions& options) : deviceIndex_(deviceIndex), options_(options) {
  validateCudaOptions(options_);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || deviceIndex < 0 || deviceIndex >= count) {
    cudaGetLastError();
    throw Error("CUDA device " + std::to_string(deviceIndex) + " is not available (" +
                (status != cudaSuccess ? std::string(cudaGetErrorString(status)) : std::to_string(count) + " visible") +
                "); pick --device below the device count or use --backend cpu");
  }
  AFD_CUDA_CHECK(cudaSetDevice(deviceIndex));
  AFD_CUDA_CHECK(cudaDeviceGetAttribute(&multiProcessors_, cudaDevAttrMultiProcessorCount, deviceIndex));
  AFD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

StreamContext::~StreamContext() { destroyStream(); }

void StreamContext::destroyStream() noexcept {
  if (stream_ == nullptr) return;
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

void StreamContext::refuseWhileCapturing(const char* what) const {
  AFD_CHECK(!capturing_, "CUDA graph capture: " << what << " inside the captured decode step (a buffer had to grow or a host "
                                                       "transfer ran); this is a bug: the warm-up step of the same graph key "
                                                       "should have grown it. Set cudaGraph.policy \"off\" to run eagerly");
}

void StreamContext::beginCapture() {
  refuseWhileCapturing("a nested beginCapture");
  beginStreamCapture(stream_);
  capturing_ = true;
}

std::unique_ptr<CapturedGraph> StreamContext::endCapture() {
  AFD_CHECK(capturing_, "CUDA graph capture: endCapture without beginCapture");
  capturing_ = false;
  return endStreamCapture(stream_, "the decode step", "set cudaGraph.policy \"off\" to run eagerly");
}

void StreamContext::abortCapture() noexcept {
  capturing_ = false;
  abandonStreamCapture(stream_);
}

void StreamContext::synchronize() {
  refuseWhileCapturing("a stream synchronize");
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace afd::cuda
