#include "cuda/deepseek-ops.h"

#include "core/deepseek-contracts.h"
#include "cuda/deepseek-route.cuh"
#include "cuda/host-helpers.h"
#include "cuda/mla-attention.cuh"
#include "cuda/mla-prologue.cuh"

namespace afd::cuda {
namespace {

int routeScoringCode(RouterScoring s) {
  switch (s) {
    case RouterScoring::Softmax: return kRouteScoringSoftmax;
    case RouterScoring::Sigmoid: return kRouteScoringSigmoid;
    case RouterScoring::None: return kRouteScoringNone;
  }
  AFD_FAIL("moeGroupedRoute: unknown scoring " << static_cast<int>(s));
}

int routeMethodCode(RouterTopkMethod m) {
  switch (m) {
    case RouterTopkMethod::Greedy: return kRouteGreedy;
    case RouterTopkMethod::GroupLimitedGreedy: return kRouteGroupLimitedGreedy;
    case RouterTopkMethod::NoauxTc: return kRouteNoauxTc;
  }
  AFD_FAIL("moeGroupedRoute: unknown topk method " << static_cast<int>(m));
}

}  // namespace

void DeepseekOps::mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions,
                              const RopeParams& rope, bool interleaved) {
  const contract::MlaDims d = contract::checkMlaNormRope(q, kvA, kvNorm, positions, rope);
  AFD_CHECK(d.R <= kMlaMaxRopeDim, "mlaNormRope: rope dim " << d.R << " is above the CUDA limit " << kMlaMaxRopeDim);
  MlaNormRopeArgs a;
  a.q = q.ptr<float>();
  a.kvA = kvA.ptr<float>();
  a.kvNorm = kvNorm.data;
  a.normDtype = code(kvNorm.dtype);
  a.positions = positions.ptr<int32_t>();
  a.invFreq = rope.invFreq.ptr<float>();
  a.attentionScale = rope.attentionScale;
  a.rows = static_cast<int>(q.dim(0));
  a.heads = static_cast<int>(d.nH);
  a.nope = static_cast<int>(d.N);
  a.rope = static_cast<int>(d.R);
  a.latent = static_cast<int>(d.L);
  a.interleaved = interleaved;
  a.eps = eps;
  cuda::mlaNormRope(a, ctx_.stream());
}

void DeepseekOps::writeLatentCache(const Tensor& kvA, const Tensor& slotMapping, Tensor& latentCache) {
  contract::checkWriteLatentCache(kvA, slotMapping, latentCache);
  cuda::writeLatentCache(kvA.ptr<float>(), slotMapping.ptr<int32_t>(), latentCache.data, code(latentCache.dtype),
                         static_cast<int>(kvA.dim(0)), static_cast<int>(kvA.dim(1)), latentCache.dim(0) * latentCache.dim(1),
                         ctx_.stream());
}

void DeepseekOps::mlaAttention(const Tensor& q, const Tensor& latentCache, const Tensor& kvB, const AttentionBatch& batch,
                               float scale, Tensor& out) {
  const contract::MlaDims d = contract::checkMlaAttention(q, latentCache, kvB, batch, out);
  const int64_t T = q.dim(0);
  AFD_CHECK(d.L <= kMlaMaxLatent && d.N <= kMlaMaxNope,
            "mlaAttention: kv_lora_rank " << d.L << " / qk_nope_head_dim " << d.N << " are above the CUDA limits "
                                          << kMlaMaxLatent << " / " << kMlaMaxNope);
  if (T == 0) return;
  AFD_CHECK(batch.numSeqs > 0 && batch.maxBlocksPerSeq > 0,
            "mlaAttention: " << T << " tokens but " << batch.numSeqs << " sequences of " << batch.maxBlocksPerSeq << " blocks");
  MlaAttentionArgs a;
  a.q = q.ptr<float>();
  a.cache = latentCache.data;
  a.cacheDtype = code(latentCache.dtype);
  a.kvB = kvB.data;
  a.kvBDtype = code(kvB.dtype);
  a.tokenSeq = batch.tokenSeq.ptr<int32_t>();
  a.positions = batch.positions.ptr<int32_t>();
  a.blockTables = batch.blockTables.ptr<int32_t>();
  a.out = out.ptr<float>();
  a.tokens = static_cast<int>(T);
  a.heads = static_cast<int>(d.nH);
  a.latent = static_cast<int>(d.L);
  a.rope = static_cast<int>(d.R);
  a.nope = static_cast<int>(d.N);
  a.value = static_cast<int>(d.V);
  a.blockSize = static_cast<int>(latentCache.dim(1));
  a.maxBlocksPerSeq = batch.maxBlocksPerSeq;
  a.scale = scale;
  a.tensorCores = ctx_.options().attentionKernel != AttentionKernel::Simt;
  // Chunking per token from the whole step's rows (a DBO stage splits as the step does).
  a.maxChunks = mlaMaxChunks(ctx_.shapeRows(T), a.heads);
  a.gridChunks = mlaGridChunks(a.maxChunks, batch.maxContextLen);
  mlaCarveWorkspace(memory_.scratch(mlaWorkspaceBytes(a.tokens, a.heads, a.latent, a.rope, a.gridChunks)), a);
  cuda::mlaAttention(a, ctx_.stream());
}

void DeepseekOps::moeGroupedRoute(const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p,
                                  Tensor& expertIds, Tensor& expertWeights) {
  contract::checkMoeGroupedRoute(logits, scoreBias, p, expertIds, expertWeights);
  const int64_t E = logits.dim(1);
  AFD_CHECK(E <= kGroupedRouteMaxExperts,
            "moeGroupedRoute: " << E << " experts are above the CUDA router's limit " << kGroupedRouteMaxExperts);
  GroupedRouteArgs a;
  a.logits = logits.ptr<float>();
  a.bias = scoreBias ? scoreBias->data : nullptr;
  a.biasDtype = scoreBias ? code(scoreBias->dtype) : 0;
  a.rows = static_cast<int>(logits.dim(0));
  a.experts = static_cast<int>(E);
  a.k = p.k;
  a.scoring = routeScoringCode(p.scoring);
  a.method = routeMethodCode(p.method);
  a.groups = p.numGroups;
  a.topkGroups = p.topkGroups;
  a.normTopk = p.normTopk;
  a.scale = p.scale;
  a.ids = expertIds.ptr<int32_t>();
  a.weights = expertWeights.ptr<float>();
  groupedRoute(a, ctx_.stream());
}

void DeepseekOps::scatterRouting(const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense) {
  contract::checkScatterRouting(expertIds, expertWeights, dense);
  cuda::scatterRouting(expertIds.ptr<int32_t>(), expertWeights.ptr<float>(), dense.ptr<float>(),
                       static_cast<int>(expertIds.dim(0)), static_cast<int>(expertIds.dim(1)), static_cast<int>(dense.dim(1)),
                       ctx_.stream());
}

}  // namespace afd::cuda
