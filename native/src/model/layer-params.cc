#include "model/layer-params.h"

#include "model/model-config.h"

namespace afd {

MoeRoutingParams moeRoutingParams(const ModelConfig& c) {
  MoeRoutingParams p;
  p.k = c.numExpertsPerTok;
  p.scoring = c.routing.scoring;
  p.method = c.routing.method;
  p.numGroups = c.routing.numGroups;
  p.topkGroups = c.routing.topkGroups;
  p.normTopk = c.normTopkProb;
  p.scale = static_cast<float>(c.routing.routedScalingFactor);
  return p;
}

void validateLayerParams(const ModelConfig& c) {
  const MlaConfig& m = c.mla;
  const bool mlaLayers = c.hasAttentionKind(AttentionKind::Mla);
  AFD_CHECK(mlaLayers == m.enabled(), "model config: " << (mlaLayers ? "mla layers need the MLA settings (config.mla)"
                                                                      : "MLA settings (config.mla) without an mla layer"));
  if (mlaLayers) {
    AFD_CHECK(m.qLoraRank >= 0 && m.qkNopeHeadDim >= 0 && m.vHeadDim > 0,
              "model config: MLA needs qLoraRank >= 0, qkNopeHeadDim >= 0 and vHeadDim > 0");
    AFD_CHECK(m.qkRopeHeadDim > 0 && m.qkRopeHeadDim % 2 == 0, "model config: MLA qkRopeHeadDim " << m.qkRopeHeadDim << " must be positive and even");
    AFD_CHECK(c.headDim == m.qkRopeHeadDim, "model config: MLA headDim (" << c.headDim << ") must equal qkRopeHeadDim (" << m.qkRopeHeadDim
                                                                           << "): RoPE runs on the rope part only");
    AFD_CHECK(m.softmaxScale > 0, "model config: MLA softmaxScale must be positive");
  }
  const GdnConfig& g = c.gdn;
  const bool gdnLayers = c.hasAttentionKind(AttentionKind::Gdn);
  AFD_CHECK(gdnLayers == g.enabled(), "model config: " << (gdnLayers ? "gdn layers need the Gated DeltaNet settings (config.gdn)"
                                                                      : "Gated DeltaNet settings (config.gdn) without a gdn layer"));
  if (gdnLayers) {
    AFD_CHECK(g.numValueHeads > 0 && g.numValueHeads % g.numKeyHeads == 0,
              "model config: gdn value heads (" << g.numValueHeads << ") must be a positive multiple of its key heads (" << g.numKeyHeads << ")");
    AFD_CHECK(g.keyHeadDim > 0 && g.valueHeadDim > 0 && g.convKernel >= 1,
              "model config: gdn keyHeadDim " << g.keyHeadDim << ", valueHeadDim " << g.valueHeadDim << " and convKernel "
                                              << g.convKernel << " must be positive");
  }
  const bool gatedShared = c.hasFfnKind(FfnKind::MoeGatedShared);
  AFD_CHECK(gatedShared == (c.gatedSharedIntermediateSize > 0),
            "model config: " << (gatedShared ? "moe+gated_shared layers need gatedSharedExpert.intermediateSize > 0"
                                             : "a gated shared expert (config.gatedSharedExpert) without a moe+gated_shared layer"));
  const MoeRoutingConfig& r = c.routing;
  const bool sharedLayers = c.hasFfnKind(FfnKind::MoeShared);
  AFD_CHECK(sharedLayers == (r.numSharedExperts > 0),
            "model config: " << (sharedLayers ? "moe+shared layers need numSharedExperts > 0 (config.routing)"
                                              : "shared experts (config.routing.numSharedExperts) without a moe+shared layer"));
  if (!r.grouped) {
    AFD_CHECK(r.numSharedExperts == 0 && !r.scoreCorrectionBias, "model config: shared experts and a score bias need grouped routing");
    return;
  }
  AFD_CHECK(c.numExperts > 0, "model config: grouped routing needs routed experts");
  AFD_CHECK(r.routedScalingFactor > 0, "model config: routedScalingFactor must be positive");
  AFD_CHECK(r.numSharedExperts >= 0 && (r.numSharedExperts == 0) == (r.sharedIntermediateSize == 0),
            "model config: numSharedExperts " << r.numSharedExperts << " and sharedIntermediateSize " << r.sharedIntermediateSize
                                              << " disagree");
  if (r.method != RouterTopkMethod::Greedy) {
    AFD_CHECK(r.numGroups >= 1 && c.numExperts % r.numGroups == 0 && r.topkGroups >= 1 && r.topkGroups <= r.numGroups,
              "model config: " << routerTopkMethodName(r.method) << " needs numGroups dividing " << c.numExperts
                               << " experts and 1 <= topkGroups (" << r.topkGroups << ") <= numGroups (" << r.numGroups << ")");
  }
  AFD_CHECK(!r.scoreCorrectionBias || r.method == RouterTopkMethod::NoauxTc, "model config: the score correction bias belongs to noaux_tc");
}

}  // namespace afd
