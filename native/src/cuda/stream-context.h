// Where the CUDA backend's ops run: one device, one non-blocking stream, the kernel
// choices (CudaOptions), the row count kernel choices are made for (Backend::setStepRows),
// and what every op family checks before it synchronizes or allocates: whether a CUDA
// graph capture is in progress, and the allocation epoch (bumped by anything that
// allocates or frees, so captured graphs over moved buffers are dropped).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "core/backend-options.h"
#include "core/backend.h"

namespace afd::cuda {

class StreamContext {
 public:
  // Throws when options are out of range (validateCudaOptions) or the device is missing.
  StreamContext(int deviceIndex, const CudaOptions& options);
  ~StreamContext();
  StreamContext(const StreamContext&) = delete;
  StreamContext& operator=(const StreamContext&) = delete;

  int deviceIndex() const { return deviceIndex_; }
  cudaStream_t stream() const { return stream_; }
  int multiProcessors() const { return multiProcessors_; }
  const CudaOptions& options() const { return options_; }

  void setStepRows(int64_t rows) { stepRows_ = rows; }
  // The row count kernel choices are made for: the step's rows when a call has fewer.
  int64_t shapeRows(int64_t rows) const { return rows > stepRows_ ? rows : stepRows_; }

  // Graph capture of the stream (cuda/step-graph.h). While capturing, anything that would
  // synchronize or (re)allocate throws a clear error instead.
  bool capturing() const { return capturing_; }
  void beginCapture();
  std::unique_ptr<CapturedGraph> endCapture();
  void abortCapture() noexcept;
  // Throws when a capture is in progress: `what` would synchronize or allocate.
  void refuseWhileCapturing(const char* what) const;

  uint64_t allocationEpoch() const { return epoch_; }
  void bumpEpoch() { ++epoch_; }

  // Waits for the stream's work (refused while capturing).
  void synchronize();
  // Waits for the stream and destroys it (the backend's teardown); later frees run synchronously.
  void destroyStream() noexcept;

 private:
  int deviceIndex_ = 0;
  CudaOptions options_;  // kernel choices (attention family and splits, expert GEMM)
  int multiProcessors_ = 0;
  cudaStream_t stream_ = nullptr;
  int64_t stepRows_ = 0;
  bool capturing_ = false;
  uint64_t epoch_ = 0;
};

}  // namespace afd::cuda
