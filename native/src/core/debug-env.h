// Debugging overrides from the environment: the only AFD_* variables the engine reads
// (NCCL and CUDA read their own). None is a setting of its own: each replaces an options
// field (or, for PDL, a process-wide launch switch) for a whole process, to measure
// another kernel choice, run a fault test or switch CUDA graphs back off without touching
// a config. All are read and checked together, once, at the first call (the first engine,
// op run, conformance run or FFN server the addon makes); later changes to the environment
// are not seen. A malformed value throws naming the variable. Listed in docs/afd-runtime.md.
#pragma once
#include <optional>

#include "core/backend-options.h"

namespace afd {

struct DebugEnv {
  // AFD_ENGINE_GRAPHS=off: no CUDA graphs in this process (EngineOptions.graphs.policy off,
  // and AfdConnectorOptions.ffnGraphs false on an FFN rank), whatever the config says.
  bool graphsOff = false;
  // AFD_CUDA_ATTENTION=simt|tc|auto: CudaOptions.attentionKernel.
  std::optional<AttentionKernel> attentionKernel;
  // AFD_ATTENTION_BLOCKS_PER_SM=1..16: CudaOptions.attentionBlocksPerSm.
  std::optional<int> attentionBlocksPerSm;
  // AFD_ATTENTION_PRECISION=split|bf16: CudaOptions.attentionPrecision.
  std::optional<AttentionPrecision> attentionPrecision;
  // AFD_EXPERT_GEMM=ours|cublas|auto: CudaOptions.expertGemm.
  std::optional<ExpertGemmChoice> expertGemm;
  // AFD_EXPERT_GEMM_MIN_TOKENS=1..2^30: CudaOptions.expertGemmMinTokens.
  std::optional<int> expertGemmMinTokens;
  // AFD_CUDA_PDL=0: kernels launch without programmatic dependent launch (cuda/launch.cuh).
  // Process-wide: a kernel launch has no backend (and no options) at hand.
  bool pdlOff = false;
  // AFD_GDN_KERNEL=warps: the gated delta rule's decode steps run the warp-per-column kernel
  // (the one of prefill) instead of the coalesced column-per-lane one (cuda/gated-delta-rule.cu).
  // Process-wide, like PDL: to measure one against the other.
  bool gdnWarpKernel = false;
  // AFD_FAULT_FFN_LAYER_DELAY_US=0..10000000: AfdConnectorOptions.faultLayerDelayUs (fault
  // tests, tools/gpu/afd-roles.mjs: the FFN rank pauses before each eagerly served layer).
  std::optional<int> faultFfnLayerDelayUs;
};

// The overrides, read at the first call. Throws (then and at every later call) when a
// variable holds something it does not take.
const DebugEnv& debugEnv();

// The CUDA choices set in the environment replace those of `options`.
void applyDebugEnv(CudaOptions& options);

}  // namespace afd
