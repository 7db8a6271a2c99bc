// The CUDA backend's ops between the LM head and the sampled token: logit bias and
// penalties in place (processLogits), sampling with the sampled tokens' log-probability
// rows (sample), and log-probability rows of given tokens (logprobs; prompt logprobs).
// Each op uploads its host settings once, runs its kernels on the stream and, for the
// last two, copies back only the tokens and the small rows (one read-back per op).
#pragma once
#include <cstdint>

#include "core/backend.h"
#include "cuda/device-memory.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class SamplingOps {
 public:
  SamplingOps(StreamContext& ctx, DeviceMemory& memory) : ctx_(ctx), memory_(memory) {}

  void processLogits(Tensor& logits, const LogitProcessing& p);
  void sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens);
  void logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out);

 private:
  StreamContext& ctx_;
  DeviceMemory& memory_;
};

}  // namespace afd::cuda
