// LocalFfnExecutor: the FfnExecutor (model/ffn-executor.h) that runs the FFN half
// in-process, on the attention half's backend.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "model/ffn-executor.h"

namespace afd {

class FfnModel;

// Runs the FFN half in-process on the same backend (colocated role, and tests that
// compare attention half + FFN half against the colocated model).
class LocalFfnExecutor : public FfnExecutor {
 public:
  explicit LocalFfnExecutor(FfnModel& ffn) : ffn_(ffn) {}
  void beginStep(const FfnStepInfo& info) override;
  void submit(int layer, int stage, const Tensor& hidden, const Tensor* routerLogits) override;
  void collect(int layer, int stage, Tensor& ffnOut) override;
  void endStep() override {}
  bool graphSafe() const override { return true; }  // only backend ops (the CUDA backend refuses syncs while capturing)

 private:
  struct Pending {
    int layer = -1;
    Tensor hidden;
    Tensor routerLogits;  // empty when none
  };
  FfnModel& ffn_;
  std::vector<Pending> pending_;  // indexed by stage
};

}  // namespace afd
