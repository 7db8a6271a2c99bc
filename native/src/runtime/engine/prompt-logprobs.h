// The prompt rows of a step whose log-probabilities are asked (StepResult.promptLogprobs):
// per sequence with numPromptLogprobs >= 0, each token of its chunk whose next token is
// known, in token order: row t targets tokenIds[t + 1] inside the chunk, or
// nextPromptTokenIds[s] for the chunk's last token when the step does not sample the
// sequence (a sampled sequence's last row is its sampled row, reported in
// StepResult.logprobs). Prompt logprobs read the raw logits (no bias, penalties or
// temperature), as vLLM does. The engine runs the LM head on these rows in chunks of
// bounded size (Engine::promptLogprobsInto, prompt-logprobs.cc).
#pragma once
#include <cstdint>
#include <vector>

#include "core/logit-ops.h"
#include "runtime/engine/step-plan.h"

namespace afd {

class PromptLogprobRows {
 public:
  // Lists the rows of `plan`; wanted() is false when no sequence asks.
  void build(const StepPlan& plan);
  bool wanted() const { return wanted_; }
  int numRows() const { return static_cast<int>(tokenRows_.size()); }
  // [numRows] the step token (row of the final hidden states) of each row.
  const std::vector<int32_t>& tokenRows() const { return tokenRows_; }
  // Rows [begin, end) as a request over a logits chunk whose row i is row begin + i, and
  // where their results go.
  LogprobRequest request(int begin, int end) const;
  LogprobRows out(int begin);
  TokenLogprobs& result() { return result_; }

 private:
  bool wanted_ = false;
  std::vector<int32_t> tokenRows_, targets_, topK_;
  TokenLogprobs result_;
};

}  // namespace afd
