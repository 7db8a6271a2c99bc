// Decode-step CUDA graphs of MoeDecoder: one graph per batch bucket, captured on first
// use (after one eager step, so cuBLAS and the driver finish lazy setup outside the
// capture), replayed on later steps of that bucket; counters for hits, misses, captures.
#include "cuda/cuda-check.h"
#include "cuda/moe-decoder.h"
#include "cuda/step-graph.h"

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
    it = graphs_.emplace(rows, captureStreamGraph(stream_, "the fused decode step", [&] { enqueueStep(rows); })).first;
    ++counters_.graphCaptures;
  } else {
    ++counters_.graphHits;
  }
  it->second->replay();
}

size_t MoeDecoder::graphNodes(int rows) {
  auto it = graphs_.find(rows);
  return it == graphs_.end() ? 0 : it->second->numNodes();
}

}  // namespace afd::cuda
