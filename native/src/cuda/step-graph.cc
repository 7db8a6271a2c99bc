#include "cuda/step-graph.h"

#include <string>

#include "core/error.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

StepGraph::~StepGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
}

void StepGraph::replay() { AFD_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

void beginStreamCapture(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  AFD_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  AFD_CHECK(status == cudaStreamCaptureStatusNone, "CUDA graph capture: the stream is already capturing (nested capture)");
  AFD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}

std::unique_ptr<StepGraph> endStreamCapture(cudaStream_t stream, const std::string& what, const std::string& advice) {
  const std::string tail = advice.empty() ? "" : "; " + advice;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess || graph == nullptr) {
    cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    AFD_FAIL("CUDA graph capture of " << what << " failed (" << cudaGetErrorName(ended) << ": " << cudaGetErrorString(ended)
                                      << "): an op inside it synchronized, copied to the host or allocated" << tail);
  }
  size_t numNodes = 0;
  cudaGraphGetNodes(graph, nullptr, &numNodes);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    cudaGetLastError();
    AFD_FAIL("CUDA graph instantiation of " << what << " failed (" << cudaGetErrorName(made) << ": "
                                            << cudaGetErrorString(made) << ")" << tail);
  }
  return std::make_unique<StepGraph>(exec, stream, numNodes);
}

void abandonStreamCapture(cudaStream_t stream) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) cudaGetLastError();
  if (status != cudaStreamCaptureStatusNone) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  cudaGetLastError();
}

}  // namespace afd::cuda
