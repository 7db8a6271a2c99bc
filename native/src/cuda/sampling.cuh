// Token sampling on the GPU: greedy, temperature, top-k, top-p, min-p. Only token ids
// (and the log-probability rows, cuda/logprobs.cuh) leave the device. The rule is the CPU
// backend's (cpu/sampling.cc): greedy = arg-max (lowest id on ties); else p =
// softmax(logits / temperature); keep the topK most likely, then the most likely prefix
// whose mass reaches topP, then the tokens with p >= minP * pmax; u =
// samplingUniform(seed, position) (core/sampling-rng.h); walk kept ids in ascending
// order and return the first whose running mass exceeds u * kept mass. Thresholds are
// found by radix selection on the logits, so tokens tied exactly at a threshold are all
// kept (the CPU keeps the lower ids); otherwise the two agree up to float rounding of
// the running sums (and of exp at the min-p boundary).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

struct SamplingArgs {
  const float* logits = nullptr;      // [rows, vocab] fp32
  const float* temperature = nullptr; // [rows]
  const int32_t* topK = nullptr;      // [rows]
  const float* topP = nullptr;        // [rows]
  const uint32_t* seed = nullptr;     // [rows]
  const int32_t* position = nullptr;  // [rows] position of the token being sampled
  const float* minP = nullptr;        // [rows]; 0 = off
  int32_t* tokens = nullptr;          // [rows] out
  int rows = 0;
  int vocab = 0;
};

void sampleTokens(const SamplingArgs& args, cudaStream_t stream);

}  // namespace afd::cuda

namespace afd::cuda {
// The device's samplingUniform for n (seed, position) pairs (device arrays); for the
// test that checks it against core/sampling-rng.h bit for bit.
void samplingUniforms(const uint32_t* seeds, const int32_t* positions, float* out, int n, cudaStream_t stream);
}  // namespace afd::cuda
