// Decode-step CUDA graphs of MoeDecoder: one graph per batch bucket, captured on first
// use (after one eager step, so cuBLAS and the driver finish lazy setup outside the
// capture), replayed on later steps of that bucket; counters for hits, misses, captures.
#include "cuda/cuda-check.h"
#include "cuda/moe-decoder.h"

namespace afd::cuda {

void MoeDecoder::launch(int rows, bool graph) {
  ++counters_.steps;
  if (!graph || !options_.useGraphs) {
    ++counters_.graphMisses;
    enqueueStep(rows);
    return;
  }
  auto it = graphs_.find(rows);
  if (it == graphs_.end()) {
    // One eager run first: cuBLAS and the driver finish lazy setup outside the capture.
    enqueueStep(rows);
    AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    cudaGraph_t g = nullptr;
    AFD_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      enqueueStep(rows);
    } catch (...) {
      cudaStreamEndCapture(stream_, &g);
      if (g != nullptr) cudaGraphDestroy(g);
      throw;
    }
    AFD_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    cudaGraphExec_t exec = nullptr;
    size_t nodes = 0;
    AFD_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    const cudaError_t status = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    AFD_CUDA_CHECK(status);
    it = graphs_.emplace(rows, exec).first;
    graphNodeCounts_[rows] = nodes;
    ++counters_.graphCaptures;
  } else {
    ++counters_.graphHits;
  }
  AFD_CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
}

size_t MoeDecoder::graphNodes(int rows) {
  auto it = graphNodeCounts_.find(rows);
  return it == graphNodeCounts_.end() ? 0 : it->second;
}

}  // namespace afd::cuda
