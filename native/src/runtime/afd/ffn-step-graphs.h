// CUDA graphs of the FFN role's whole step on a device wire: for every layer and stage,
// receive hidden (+ router logits) -> FFN forward -> send, captured through the
// backend's capture API (Backend::beginCapture / endCapture) as one graph per
// per-stage row counts (the padded counts the attention side announces), replayed when
// the control payload's replay flag names a cached key. A graph is valid only while the
// backend's allocation epoch it was captured in holds; the cache drops itself otherwise.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "core/backend.h"

namespace afd {

// Rows of stage 0 and stage 1 (0 without DBO), summed over the block's peers; with
// expert parallelism's device exchange also the step's section rows and the group's
// stage count (both 0 without it).
using FfnGraphKey = std::array<int64_t, 4>;

class FfnStepGraphs {
 public:
  explicit FfnStepGraphs(Backend& backend) : backend_(backend) {}
  // Null when the backend cannot capture (the eager path stays selectable).
  static std::unique_ptr<FfnStepGraphs> create(Backend& backend);

  // False as well when the backend has allocated or freed since the graphs were captured.
  bool has(const FfnGraphKey& key);
  // Captures enqueue() (stream work only: no host sync, no allocation) as the graph of
  // key, replacing any, then launches it once. A failed capture throws with the reason.
  void captureAndLaunch(const FfnGraphKey& key, const std::function<void()>& enqueue);
  void launch(const FfnGraphKey& key);
  // Drops every graph. The caller makes sure no launch is in flight (the step was waited for).
  void clear() { graphs_.clear(); }
  size_t size() const { return graphs_.size(); }

 private:
  Backend& backend_;
  std::map<FfnGraphKey, std::unique_ptr<CapturedGraph>> graphs_;
  uint64_t epoch_ = 0;  // backend allocation epoch of the graphs in graphs_
};

}  // namespace afd
