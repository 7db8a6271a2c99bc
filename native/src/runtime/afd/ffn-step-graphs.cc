#include "runtime/afd/ffn-step-graphs.h"

#include <string>

#include "core/error.h"

namespace afd {

std::unique_ptr<FfnStepGraphs> FfnStepGraphs::create(Backend& backend) {
  if (!backend.supportsGraphCapture()) return nullptr;
  return std::make_unique<FfnStepGraphs>(backend);
}

bool FfnStepGraphs::has(const FfnGraphKey& key) {
  if (!graphs_.empty() && backend_.allocationEpoch() != epoch_) graphs_.clear();  // buffers may have moved
  return graphs_.count(key) != 0;
}

void FfnStepGraphs::captureAndLaunch(const FfnGraphKey& key, const std::function<void()>& enqueue) {
  if (!graphs_.empty() && backend_.allocationEpoch() != epoch_) graphs_.clear();
  graphs_.erase(key);
  const uint64_t before = backend_.allocationEpoch();
  std::unique_ptr<CapturedGraph> graph =
      captureGraph(backend_, "FFN step graph [" + std::to_string(key[0]) + ", " + std::to_string(key[1]) + "]",
                   "set cudaGraph.policy \"off\" on the FFN rank to serve eagerly", enqueue);
  if (graphs_.empty()) epoch_ = before;
  graph->replay();
  graphs_[key] = std::move(graph);
}

void FfnStepGraphs::launch(const FfnGraphKey& key) {
  auto it = graphs_.find(key);
  AFD_CHECK(it != graphs_.end(), "FFN step graph [" << key[0] << ", " << key[1] << "] is not captured");
  it->second->replay();
}

}  // namespace afd
