// The hyper-parameters of mla layers and of grouped routing with shared experts (C++
// mirror of MlaSpec / MoeRoutingSpec in native/src/modelSpec.ts; DeepSeek-V2/V3 use
// them). Both are off (kvLoraRank 0, grouped false) when no layer uses them.
#pragma once
#include <cstdint>

#include "core/deepseek-ops.h"

namespace afd {

struct ModelConfig;

struct MlaConfig {
  int64_t qLoraRank = 0;   // 0: the attn.q_proj slot (DeepSeek-V2-Lite); else attn.q_a_proj -> q_a_norm -> q_b_proj
  int64_t kvLoraRank = 0;  // the latent the cache holds per token; 0: not MLA
  int64_t qkNopeHeadDim = 0, qkRopeHeadDim = 0, vHeadDim = 0;
  bool ropeInterleave = true;  // RoPE on pairs (x[2i], x[2i+1]); false: rotate-half
  double softmaxScale = 0;     // qk_head_dim ** -0.5 (x yarn mscale(factor, mscale_all_dim) ** 2)

  bool enabled() const { return kvLoraRank > 0; }
  int64_t qkHeadDim() const { return qkNopeHeadDim + qkRopeHeadDim; }
  // One latent cache row: the normed latent, then the roped key.
  int64_t latentRowDim() const { return kvLoraRank + qkRopeHeadDim; }
};

// Gated DeltaNet (gdn) layers: Hk key heads of Dk, Hv value heads of Dv (Hv a multiple of
// Hk), a depthwise causal conv of width convKernel over the q|k|v channels; the input
// projection stored grouped per key head (Qwen3-Next) or split (Qwen3.5). Off (no key
// heads) when no layer is gdn.
struct GdnConfig {
  int numKeyHeads = 0, numValueHeads = 0;
  int64_t keyHeadDim = 0, valueHeadDim = 0;
  int convKernel = 0;
  bool grouped = false;  // in_proj_qkvz + in_proj_ba; else in_proj_qkv, in_proj_z, in_proj_b, in_proj_a

  bool enabled() const { return numKeyHeads > 0; }
  int64_t keyDim() const { return numKeyHeads * keyHeadDim; }
  int64_t valueDim() const { return numValueHeads * valueHeadDim; }
  int64_t convDim() const { return 2 * keyDim() + valueDim(); }  // the conv's channels: q | k | v
};

struct MoeRoutingConfig {
  bool grouped = false;  // false: softmax top-k (Backend::routerTopK); true: Backend::moeGroupedRoute
  RouterScoring scoring = RouterScoring::Softmax;
  RouterTopkMethod method = RouterTopkMethod::Greedy;
  int numGroups = 1, topkGroups = 1;
  double routedScalingFactor = 1;
  bool scoreCorrectionBias = false;  // the ffn.router_bias slot [E] (noaux_tc)
  int numSharedExperts = 0;
  int64_t sharedIntermediateSize = 0;  // moe_intermediate_size x n_shared_experts
};

// The Backend routing parameters of a grouped-routing config.
MoeRoutingParams moeRoutingParams(const ModelConfig& c);
// Checks the MLA, gdn and routing fields against the layer kinds (called by validateModelConfig).
void validateLayerParams(const ModelConfig& c);

}  // namespace afd
