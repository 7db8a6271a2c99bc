// Shape and dtype contracts of the DeepSeek Backend ops (core/backend.h), one per op,
// for every backend that implements them (as core/op-contracts.h for the others).
#pragma once
#include "core/backend.h"
#include "core/op-checks.h"

namespace afd::contract {

// MLA dims of one call, read off the tensors: L latent, R rope, N nope, V value.
struct MlaDims {
  int64_t L = 0, R = 0, N = 0, V = 0, nH = 0;
};

// q: [T, nH, N + R]; kvA: [T, L + R]; kvNorm: [L]; positions: [T] i32; invFreq: [R / 2].
inline MlaDims checkMlaNormRope(const Tensor& q, const Tensor& kvA, const Tensor& kvNorm, const Tensor& positions,
                                const RopeParams& rope) {
  checkShape("mlaNormRope", "q", q, {-1, -1, -1});
  checkDType("mlaNormRope", "q", q, DType::F32);
  const int64_t T = q.dim(0);
  checkShape("mlaNormRope", "kvA", kvA, {T, -1});
  checkDType("mlaNormRope", "kvA", kvA, DType::F32);
  checkShape("mlaNormRope", "kvNorm", kvNorm, {-1});
  checkFloat("mlaNormRope", "kvNorm", kvNorm);
  MlaDims d;
  d.nH = q.dim(1);
  d.L = kvNorm.dim(0);
  d.R = kvA.dim(1) - d.L;
  d.N = q.dim(2) - d.R;
  AFD_CHECK(d.R > 0 && d.R % 2 == 0 && d.N >= 0,
            "mlaNormRope: kvA row " << kvA.dim(1) << " minus the latent " << d.L << " leaves rope dim " << d.R
                                    << " (must be positive, even and at most the q head dim " << q.dim(2) << ")");
  checkShape("mlaNormRope", "positions", positions, {T});
  checkDType("mlaNormRope", "positions", positions, DType::I32);
  checkShape("mlaNormRope", "rope.invFreq", rope.invFreq, {d.R / 2});
  return d;
}

// kvA: [T, W] f32; slotMapping: [T] i32; latentCache: [numBlocks, B, W].
inline void checkWriteLatentCache(const Tensor& kvA, const Tensor& slotMapping, const Tensor& cache) {
  checkShape("writeLatentCache", "kvA", kvA, {-1, -1});
  checkDType("writeLatentCache", "kvA", kvA, DType::F32);
  checkShape("writeLatentCache", "slotMapping", slotMapping, {kvA.dim(0)});
  checkDType("writeLatentCache", "slotMapping", slotMapping, DType::I32);
  checkShape("writeLatentCache", "latentCache", cache, {-1, -1, kvA.dim(1)});
  checkFloat("writeLatentCache", "latentCache", cache);
}

// q: [T, nH, N + R]; latentCache: [numBlocks, B, L + R]; kvB: [nH * (N + V), L]; out: [T, nH, V].
inline MlaDims checkMlaAttention(const Tensor& q, const Tensor& cache, const Tensor& kvB, const AttentionBatch& batch,
                                 const Tensor& out) {
  checkShape("mlaAttention", "q", q, {-1, -1, -1});
  checkDType("mlaAttention", "q", q, DType::F32);
  const int64_t T = q.dim(0);
  MlaDims d;
  d.nH = q.dim(1);
  checkShape("mlaAttention", "out", out, {T, d.nH, -1});
  checkDType("mlaAttention", "out", out, DType::F32);
  d.V = out.dim(2);
  checkShape("mlaAttention", "kvB", kvB, {-1, -1});
  checkFloat("mlaAttention", "kvB", kvB);
  d.L = kvB.dim(1);
  checkShape("mlaAttention", "latentCache", cache, {-1, -1, -1});
  checkFloat("mlaAttention", "latentCache", cache);
  d.R = cache.dim(2) - d.L;
  d.N = q.dim(2) - d.R;
  AFD_CHECK(d.R > 0 && d.N >= 0, "mlaAttention: cache row " << cache.dim(2) << " and latent " << d.L << " leave rope dim " << d.R
                                                              << ", which the q head dim " << q.dim(2) << " cannot hold");
  checkShape("mlaAttention", "kvB", kvB, {d.nH * (d.N + d.V), d.L});
  checkShape("mlaAttention", "tokenSeq", batch.tokenSeq, {T});
  checkShape("mlaAttention", "positions", batch.positions, {T});
  checkShape("mlaAttention", "blockTables", batch.blockTables, {batch.numSeqs, batch.maxBlocksPerSeq});
  return d;
}

// logits: [T, E] f32; scoreBias: [E] or null; expertIds: [T, k] i32; expertWeights: [T, k] f32.
inline void checkMoeGroupedRoute(const Tensor& logits, const Tensor* bias, const MoeRoutingParams& p, const Tensor& ids,
                          const Tensor& weights) {
  checkShape("moeGroupedRoute", "logits", logits, {-1, -1});
  checkDType("moeGroupedRoute", "logits", logits, DType::F32);
  const int64_t T = logits.dim(0), E = logits.dim(1);
  AFD_CHECK(p.k >= 1 && p.k <= E, "moeGroupedRoute: k = " << p.k << " must be in [1, " << E << "]");
  if (bias) {
    checkShape("moeGroupedRoute", "scoreBias", *bias, {E});
    checkFloat("moeGroupedRoute", "scoreBias", *bias);
  }
  if (p.method != RouterTopkMethod::Greedy) {
    AFD_CHECK(p.numGroups >= 1 && E % p.numGroups == 0 && p.topkGroups >= 1 && p.topkGroups <= p.numGroups,
              "moeGroupedRoute: " << routerTopkMethodName(p.method) << " needs numGroups dividing " << E
                                  << " experts and 1 <= topkGroups (" << p.topkGroups << ") <= numGroups (" << p.numGroups << ")");
    AFD_CHECK(p.topkGroups * (E / p.numGroups) >= p.k,
              "moeGroupedRoute: " << p.topkGroups << " groups of " << E / p.numGroups << " experts cannot hold top-" << p.k);
    AFD_CHECK(p.method != RouterTopkMethod::NoauxTc || E / p.numGroups >= 2,
              "moeGroupedRoute: noaux_tc scores each group by its top 2 experts; groups of " << E / p.numGroups
                                                                                      << " are too small");
  }
  checkShape("moeGroupedRoute", "expertIds", ids, {T, p.k});
  checkDType("moeGroupedRoute", "expertIds", ids, DType::I32);
  checkShape("moeGroupedRoute", "expertWeights", weights, {T, p.k});
  checkDType("moeGroupedRoute", "expertWeights", weights, DType::F32);
}

// expertIds, expertWeights: [T, K]; dense: [T, E] f32.
inline void checkScatterRouting(const Tensor& ids, const Tensor& weights, const Tensor& dense) {
  checkShape("scatterRouting", "expertIds", ids, {-1, -1});
  checkDType("scatterRouting", "expertIds", ids, DType::I32);
  checkShape("scatterRouting", "expertWeights", weights, {ids.dim(0), ids.dim(1)});
  checkDType("scatterRouting", "expertWeights", weights, DType::F32);
  checkShape("scatterRouting", "dense", dense, {ids.dim(0), -1});
  checkDType("scatterRouting", "dense", dense, DType::F32);
}

}  // namespace afd::contract
