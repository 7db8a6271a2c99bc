// CUDA graph capture on one stream: the engine's decode step (Backend::beginCapture /
// endCapture / abortCapture of the CUDA backend), the fused decoder's and the AFD split
// decoders' step graphs, and the benches' graphs (captureStreamGraph). Capture uses
// cudaStreamCaptureModeThreadLocal, so other threads (the NCCL watcher, JS) keep working.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "core/backend.h"

namespace afd::cuda {

// An instantiated graph; replay() launches it on the stream it was captured on.
class StepGraph final : public CapturedGraph {
 public:
  StepGraph(cudaGraphExec_t exec, cudaStream_t stream, size_t numNodes) : exec_(exec), stream_(stream), numNodes_(numNodes) {}
  ~StepGraph() override;
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  void replay() override;
  size_t numNodes() const { return numNodes_; }
  size_t nodeCount() const override { return numNodes_; }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
  size_t numNodes_;
};

// Starts recording `stream` (throws when it is already capturing).
void beginStreamCapture(cudaStream_t stream);
// Ends the recording and instantiates it (throws with CUDA's reason when the capture was
// invalidated, e.g. by a synchronize inside it). `what` names the captured work in the
// error; `advice`, when given, ends it.
std::unique_ptr<StepGraph> endStreamCapture(cudaStream_t stream, const std::string& what, const std::string& advice = "");
// Ends a capture that failed part-way and drops what was recorded; never throws.
void abandonStreamCapture(cudaStream_t stream) noexcept;

// Records what fn enqueues on `stream` as one graph; a throw from fn abandons the capture
// and propagates.
template <typename Fn>
std::unique_ptr<StepGraph> captureStreamGraph(cudaStream_t stream, const std::string& what, Fn&& fn) {
  beginStreamCapture(stream);
  try {
    fn();
  } catch (...) {
    abandonStreamCapture(stream);
    throw;
  }
  return endStreamCapture(stream, what);
}

}  // namespace afd::cuda
