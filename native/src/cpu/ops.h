// CPU op entries, one family per .cc file; shapes as documented in core/backend.h.
// Every op checks its shapes and throws afd::Error on a mismatch.
#pragma once
#include <vector>

#include "core/backend.h"
#include "core/thread-pool.h"

namespace afd::cpu {

void embedding(ThreadPool& pool, const Tensor& ids, const Tensor& table, Tensor& out);        // embedding.cc
void rmsNorm(ThreadPool& pool, const Tensor& x, const Tensor& weight, float eps, Tensor& out);  // rmsnorm.cc
void addRmsNorm(ThreadPool& pool, const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out);
void qkNormRope(ThreadPool& pool, Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm,
                const Tensor* kNorm, float eps, const RopeParams& rope);  // rope.cc
void writeKvCache(ThreadPool& pool, const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache,
                  Tensor& vCache);  // attention.cc
void pagedAttention(ThreadPool& pool, const Tensor& q, const Tensor& kCache, const Tensor& vCache,
                    const AttentionBatch& batch, float scale, Tensor& out);
void matmul(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out);  // matmul.cc
void matmulAdd(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out);
void qkNormRopeCache(ThreadPool& pool, const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping,
                     const Tensor* qNorm, const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q,
                     Tensor& kCache, Tensor& vCache);  // rope.cc
void fillRandom(ThreadPool& pool, Tensor& t, uint64_t key, float scale, float offset);  // elementwise.cc
void siluGatedMlp(ThreadPool& pool, const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down,
                  Tensor& out);  // mlp.cc
void routerTopK(ThreadPool& pool, const Tensor& logits, int k, bool normTopk, Tensor& expertIds,
                Tensor& expertWeights);  // router.cc
void moeExperts(ThreadPool& pool, const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                const std::vector<ExpertWeights>& experts, Tensor& out);  // moe.cc
void add(ThreadPool& pool, const Tensor& a, const Tensor& b, Tensor& out);  // elementwise.cc
void sigmoidGate(ThreadPool& pool, const Tensor& x, const Tensor& gate, Tensor& out);  // elementwise.cc
void gatherRows(ThreadPool& pool, const Tensor& x, const Tensor& rows, Tensor& out);
void sample(ThreadPool& pool, const Tensor& logits, const SamplingBatch& params, int32_t* outTokens);  // sampling.cc
class PenaltyTable;  // penalty-table.h
// table: the slots of rows with penaltySlot >= 0 (null when no row has one).
void processLogits(ThreadPool& pool, Tensor& logits, const LogitProcessing& p, const PenaltyTable* table);  // logit-processing.cc
void logprobs(ThreadPool& pool, const Tensor& logits, const LogprobRequest& req, const LogprobRows& out);  // logprobs.cc
// One log-probability row of l[0, V) (LogprobRequest's rule): ids, values [width], rank.
void logprobRow(const float* l, int64_t V, float temperature, int32_t target, int k, int width, int32_t* ids, float* values,
                int32_t* rank);
// DeepSeek (core/backend.h, "DeepSeek-V2/V3").
void mlaNormRope(ThreadPool& pool, Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions,
                 const RopeParams& rope, bool interleaved);  // mla.cc
void writeLatentCache(ThreadPool& pool, const Tensor& kvA, const Tensor& slotMapping, Tensor& latentCache);
void mlaAttention(ThreadPool& pool, const Tensor& q, const Tensor& latentCache, const Tensor& kvB,
                  const AttentionBatch& batch, float scale, Tensor& out);
void moeGroupedRoute(ThreadPool& pool, const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p,
              Tensor& expertIds, Tensor& expertWeights);  // moe-route.cc
void scatterRouting(ThreadPool& pool, const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense);
// Linear attention (core/backend.h, "linear attention").
void splitColumns(ThreadPool& pool, const Tensor& x, const std::vector<Tensor*>& outs);  // linear-attention.cc
void causalConv1d(ThreadPool& pool, const Tensor& x, const Tensor& weight, Tensor& convState,
                  const LinearAttentionBatch& batch, Tensor& out);  // linear-attention.cc
void gatedDeltaRule(ThreadPool& pool, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                    const Tensor& beta, Tensor& state, const LinearAttentionBatch& batch, Tensor& out);
void rmsNormGated(ThreadPool& pool, const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out);
void gdnGating(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g,
               Tensor& beta);

}  // namespace afd::cpu
