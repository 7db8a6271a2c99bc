#include "model/local-ffn-executor.h"

#include "core/error.h"
#include "model/model.h"

namespace afd {

void LocalFfnExecutor::beginStep(const FfnStepInfo& info) { pending_.assign(info.stageTokenCounts.size(), Pending{}); }

void LocalFfnExecutor::submit(int layer, int stage, const Tensor& hidden, const Tensor* routerLogits) {
  AFD_CHECK(stage >= 0 && stage < static_cast<int>(pending_.size()), "FFN executor: stage " << stage << " was not announced by beginStep");
  pending_[stage] = Pending{layer, hidden, routerLogits ? *routerLogits : Tensor{}};
}

void LocalFfnExecutor::collect(int layer, int stage, Tensor& ffnOut) {
  AFD_CHECK(stage >= 0 && stage < static_cast<int>(pending_.size()) && pending_[stage].layer == layer,
            "FFN executor: collect(" << layer << ", " << stage << ") has no matching submit");
  Pending& p = pending_[stage];
  ffn_.forward(layer, p.hidden, p.routerLogits.empty() ? nullptr : &p.routerLogits, ffnOut);
  p.layer = -1;
}

}  // namespace afd
