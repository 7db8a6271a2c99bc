// The CUDA backend's ops between the LM head and the sampled token: logit bias and
// penalties in place (processLogits), sampling with the sampled tokens' log-probability
// rows (sample), and log-probability rows of given tokens (logprobs; prompt logprobs).
// Each op uploads its host settings once, runs its kernels on the stream and, for the
// last two, copies back only the tokens and the small rows (one read-back per op).
#pragma once
#include <cstdint>

#include "core/backend.h"
#include "cuda/device-buffer.h"
#include "cuda/device-memory.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class SamplingOps {
 public:
  SamplingOps(StreamContext& ctx, DeviceMemory& memory) : ctx_(ctx), memory_(memory) {}

  void processLogits(Tensor& logits, const LogitProcessing& p);
  // The penalty table (core/logit-ops.h): clears and seeds slots, growing the table.
  void seedPenaltySlots(const PenaltySeeds& seeds, int64_t vocab);
  void sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens);
  void logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out);

 private:
  // Checks that rows' slots (-1 or seeded) fit the table of `vocab` tokens.
  void checkSlots(const char* op, const int32_t* slots, size_t rows, int64_t vocab) const;

  StreamContext& ctx_;
  DeviceMemory& memory_;
  // The penalty table: tableRows_ slots of tableVocab_ int32 entries.
  DeviceBuffer table_;
  int32_t tableRows_ = 0;
  int64_t tableVocab_ = 0;
};

}  // namespace afd::cuda
