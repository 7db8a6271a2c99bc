#include "runtime/engine/prompt-logprobs.h"

#include <algorithm>
#include <limits>

#include "runtime/engine/engine.h"

namespace afd {

void PromptLogprobRows::build(const StepPlan& plan) {
  tokenRows_.clear();
  targets_.clear();
  topK_.clear();
  result_ = TokenLogprobs{};
  result_.rowOffsets.assign(1, 0);
  const StepExtras* x = plan.extras;
  wanted_ = false;
  int width = 1;
  for (int s = 0; x != nullptr && s < plan.numSeqs; ++s) {
    const int k = x->numPromptLogprobs[s];
    wanted_ = wanted_ || k >= 0;
    width = std::max(width, 1 + k);
  }
  if (!wanted_) return;
  result_.width = width;
  for (int s = 0; s < plan.numSeqs; ++s) {
    const int k = x->numPromptLogprobs[s];
    const int32_t b = plan.tokenOffsets[s], e = plan.tokenOffsets[s + 1];
    for (int32_t t = b; k >= 0 && t < e; ++t) {
      const bool last = t == e - 1;
      const int32_t target = !last ? plan.tokenIds[t + 1] : (plan.sampleMask[s] ? -1 : x->nextPromptTokenIds[s]);
      if (target < 0) continue;  // the sampled row, or the prompt's end is not known to this step
      tokenRows_.push_back(t);
      targets_.push_back(target);
      topK_.push_back(k);
    }
    result_.rowOffsets.push_back(static_cast<int32_t>(tokenRows_.size()));
  }
  const size_t R = tokenRows_.size(), W = static_cast<size_t>(width);
  result_.tokenIds.assign(R * W, -1);
  result_.logprobs.assign(R * W, std::numeric_limits<float>::quiet_NaN());
  result_.ranks.assign(R, 0);
}

LogprobRequest PromptLogprobRows::request(int begin, int end) const {
  LogprobRequest r;
  r.numRows = end - begin;
  r.width = result_.width;
  r.topK = topK_.data() + begin;
  r.targets = targets_.data() + begin;
  return r;  // rows null: chunk row i; temperature null: raw logits
}

LogprobRows PromptLogprobRows::out(int begin) {
  const size_t W = static_cast<size_t>(result_.width);
  return LogprobRows{result_.tokenIds.data() + begin * W, result_.logprobs.data() + begin * W, result_.ranks.data() + begin};
}

// The LM head on the prompt rows (gathered from the final hidden states by deviceRows,
// [numRows] i32 on the device), in chunks that keep the logits workspace bounded.
void Engine::promptLogprobsInto(const int32_t* deviceRows, int64_t numTokens, StepResult& result) {
  PromptLogprobRows& rows = promptRows_;
  const ModelConfig& c = spec_.config;
  Backend& be = *backend_;
  const int P = rows.numRows();
  const int64_t budgetRows = std::max<int64_t>(1, static_cast<int64_t>(kPromptLogitBytes / (c.vocabSize * sizeof(float))));
  const int chunk = static_cast<int>(std::min<int64_t>(P, std::max<int64_t>(ws_->seqs, budgetRows)));
  if (P > 0) ws_->reserve(0, chunk);
  const Tensor normed = ws_->normed.view(ws_->act, {numTokens, c.hiddenSize});
  for (int b = 0; b < P; b += chunk) {
    const int n = std::min(chunk, P - b);
    Tensor last = ws_->lastHidden.view(ws_->act, {n, c.hiddenSize});
    Tensor logits = ws_->logits.view(DType::F32, {n, c.vocabSize});
    be.gatherRows(normed, Tensor(const_cast<int32_t*>(deviceRows) + b, DType::I32, {n}, be.device()), last);
    be.lmHead(last, attention_->lmHeadWeight(), logits);
    be.logprobs(logits, rows.request(b, b + n), rows.out(b));
  }
  result.promptLogprobs = std::move(rows.result());
}

}  // namespace afd
