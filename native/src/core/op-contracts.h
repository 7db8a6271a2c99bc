// The shape and dtype contract of each Backend op, checked by every backend before it
// runs the op (messages name the op and the tensor). One definition per op, so the CPU
// and CUDA backends refuse exactly the same inputs.
#pragma once
#include "core/backend.h"
#include "core/op-checks.h"

namespace afd::contract {

// ids: [T] i32; table: [V, H]; out: [T, H] f32.
inline void checkEmbedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
  checkShape("embedding", "ids", ids, {-1});
  checkDType("embedding", "ids", ids, DType::I32);
  checkShape("embedding", "table", table, {-1, -1});
  checkFloat("embedding", "table", table);
  checkShape("embedding", "out", out, {ids.dim(0), table.dim(1)});
  checkDType("embedding", "out", out, DType::F32);
}

// x: [T, H] f32; out: [T, H] act; weight: [H].
inline void checkRmsNorm(const Tensor& x, const Tensor& weight, const Tensor& out) {
  checkShape("rmsNorm", "x", x, {-1, -1});
  checkDType("rmsNorm", "x", x, DType::F32);
  checkShape("rmsNorm", "weight", weight, {x.dim(1)});
  checkFloat("rmsNorm", "weight", weight);
  checkShape("rmsNorm", "out", out, {x.dim(0), x.dim(1)});
  checkAct("rmsNorm", "out", out);
}

// delta, out: [T, H] act; residual: [T, H] f32; weight: [H].
inline void checkAddRmsNorm(const Tensor& delta, const Tensor& residual, const Tensor& weight, const Tensor& out) {
  checkShape("addRmsNorm", "residual", residual, {-1, -1});
  checkDType("addRmsNorm", "residual", residual, DType::F32);
  const int64_t T = residual.dim(0), H = residual.dim(1);
  checkShape("addRmsNorm", "delta", delta, {T, H});
  checkAct("addRmsNorm", "delta", delta);
  checkShape("addRmsNorm", "weight", weight, {H});
  checkFloat("addRmsNorm", "weight", weight);
  checkShape("addRmsNorm", "out", out, {T, H});
  checkAct("addRmsNorm", "out", out);
}

// What both fused q/k norm + RoPE ops take beside q and k, for T tokens of head dim D:
// positions [T] i32, invFreq [R / 2] with R <= D the rotated dims (D even), the q and k norms [D] or null.
inline void checkRopeInputs(const char* op, int64_t T, int64_t D, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm,
                            const RopeParams& rope) {
  checkShape(op, "positions", positions, {T});
  checkDType(op, "positions", positions, DType::I32);
  checkShape(op, "rope.invFreq", rope.invFreq, {-1});
  AFD_CHECK(rope.invFreq.dim(0) > 0 && 2 * rope.invFreq.dim(0) <= D,
            op << ": rope.invFreq has " << rope.invFreq.dim(0) << " frequencies; a head of " << D << " dims rotates at most " << D / 2);
  AFD_CHECK(D % 2 == 0, op << ": head dim " << D << " must be even");
  if (qNorm) checkShape(op, "qNorm", *qNorm, {D});
  if (kNorm) checkShape(op, "kNorm", *kNorm, {D});
}

// qkv: [T, (nH + 2 nKv) D] f32; q: [T, nH, D] f32; caches: [numBlocks, blockSize, nKv, D].
inline void checkQkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping,
                                 const Tensor* qNorm, const Tensor* kNorm, const RopeParams& rope, const Tensor& q,
                                 const Tensor& kCache, const Tensor& vCache) {
  checkShape("qkNormRopeCache", "q", q, {-1, -1, -1});
  checkDType("qkNormRopeCache", "q", q, DType::F32);
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2);
  checkShape("qkNormRopeCache", "kCache", kCache, {-1, -1, -1, D});
  checkFloat("qkNormRopeCache", "kCache", kCache);
  const int64_t nKv = kCache.dim(2);
  checkShape("qkNormRopeCache", "vCache", vCache, {kCache.dim(0), kCache.dim(1), nKv, D});
  AFD_CHECK(kCache.dtype == vCache.dtype, "qkNormRopeCache: k and v caches must share a dtype");
  checkShape("qkNormRopeCache", "qkv", qkv, {T, (nH + 2 * nKv) * D});
  checkDType("qkNormRopeCache", "qkv", qkv, DType::F32);
  checkShape("qkNormRopeCache", "slotMapping", slotMapping, {T});
  checkDType("qkNormRopeCache", "slotMapping", slotMapping, DType::I32);
  checkRopeInputs("qkNormRopeCache", T, D, positions, qNorm, kNorm, rope);
}

// q: [T, nH, D]; k: [T, nKv, D]; positions: [T] i32; invFreq: [D / 2]; norms: [D] or null.
inline void checkQkNormRope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor* qNorm,
                            const Tensor* kNorm, const RopeParams& rope) {
  checkShape("qkNormRope", "q", q, {-1, -1, -1});
  const int64_t T = q.dim(0), D = q.dim(2);
  checkShape("qkNormRope", "k", k, {T, -1, D});
  checkRopeInputs("qkNormRope", T, D, positions, qNorm, kNorm, rope);
}

// k, v: [T, nKv, D] f32; slotMapping: [T] i32; caches: [numBlocks, blockSize, nKv, D].
inline void checkWriteKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, const Tensor& kCache,
                              const Tensor& vCache) {
  checkShape("writeKvCache", "k", k, {-1, -1, -1});
  const int64_t T = k.dim(0), nKv = k.dim(1), D = k.dim(2);
  checkShape("writeKvCache", "v", v, {T, nKv, D});
  checkShape("writeKvCache", "slotMapping", slotMapping, {T});
  checkDType("writeKvCache", "slotMapping", slotMapping, DType::I32);
  checkShape("writeKvCache", "kCache", kCache, {-1, -1, nKv, D});
  checkShape("writeKvCache", "vCache", vCache, {kCache.dim(0), kCache.dim(1), nKv, D});
}

// x: [T, K] f32 or act; w: [N, K]; bias: [N] or null; out: [T, N] f32.
inline void checkMatmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) {
  checkShape("matmul", "x", x, {-1, -1});
  checkAct("matmul", "x", x);
  checkShape("matmul", "w", w, {-1, x.dim(1)});
  checkFloat("matmul", "w", w);
  checkShape("matmul", "out", out, {x.dim(0), w.dim(0)});
  checkDType("matmul", "out", out, DType::F32);
  if (bias) checkShape("matmul", "bias", *bias, {w.dim(0)});
}

// x, out: [T, H] act (one dtype); gate, up: [I, H]; down: [H, I].
inline void checkSiluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down,
                              const Tensor& out) {
  checkShape("siluGatedMlp", "x", x, {-1, -1});
  checkAct("siluGatedMlp", "x", x);
  checkDType("siluGatedMlp", "out", out, x.dtype);
  const int64_t T = x.dim(0), H = x.dim(1), I = gate.dim(0);
  checkShape("siluGatedMlp", "gate", gate, {I, H});
  checkShape("siluGatedMlp", "up", up, {I, H});
  checkShape("siluGatedMlp", "down", down, {H, I});
  checkShape("siluGatedMlp", "out", out, {T, H});
}

// logits: [T, E] f32; expertIds: [T, k] i32; expertWeights: [T, k] f32.
inline void checkRouterTopK(const Tensor& logits, int k, const Tensor& expertIds, const Tensor& expertWeights) {
  checkShape("routerTopK", "logits", logits, {-1, -1});
  const int64_t T = logits.dim(0), E = logits.dim(1);
  AFD_CHECK(k >= 1 && k <= E, "routerTopK: k = " << k << " must be in [1, " << E << "]");
  checkShape("routerTopK", "expertIds", expertIds, {T, k});
  checkDType("routerTopK", "expertIds", expertIds, DType::I32);
  checkShape("routerTopK", "expertWeights", expertWeights, {T, k});
}

// x, out: [T, H] act (one dtype); expertIds: [T, K] i32; expertWeights: [T, K]; addend:
// null or [T, H] of out's dtype.
inline void checkMoeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights, const Tensor& out,
                            const Tensor* addend = nullptr) {
  checkShape("moeExperts", "x", x, {-1, -1});
  checkAct("moeExperts", "x", x);
  checkDType("moeExperts", "out", out, x.dtype);
  const int64_t T = x.dim(0), H = x.dim(1);
  checkShape("moeExperts", "expertIds", expertIds, {T, -1});
  checkDType("moeExperts", "expertIds", expertIds, DType::I32);
  checkShape("moeExperts", "expertWeights", expertWeights, {T, expertIds.dim(1)});
  checkShape("moeExperts", "out", out, {T, H});
  if (addend != nullptr) {
    checkShape("moeExperts", "addend", *addend, {T, H});
    checkDType("moeExperts", "addend", *addend, out.dtype);
  }
}

// a, b, out: one dtype (f32 or act), the same element count.
// x, out: [T, N] f32 or act, one dtype; gate: [T, G] f32 with G dividing N.
inline void checkSigmoidGate(const Tensor& x, const Tensor& gate, const Tensor& out) {
  checkShape("sigmoidGate", "x", x, {-1, -1});
  checkAct("sigmoidGate", "x", x);
  checkShape("sigmoidGate", "out", out, {x.dim(0), x.dim(1)});
  AFD_CHECK(out.dtype == x.dtype, "sigmoidGate: out must have x's dtype");
  checkShape("sigmoidGate", "gate", gate, {x.dim(0), -1});
  checkDType("sigmoidGate", "gate", gate, DType::F32);
  AFD_CHECK(gate.dim(1) > 0 && x.dim(1) % gate.dim(1) == 0,
            "sigmoidGate: " << gate.dim(1) << " gates per row do not divide the row of " << x.dim(1));
}

inline void checkAdd(const Tensor& a, const Tensor& b, const Tensor& out) {
  AFD_CHECK(a.numel() == b.numel() && a.numel() == out.numel(),
            "add: shapes " << a.shapeString() << " + " << b.shapeString() << " -> " << out.shapeString() << " differ in size");
  checkAct("add", "a", a);
  checkDType("add", "b", b, a.dtype);
  checkDType("add", "out", out, a.dtype);
  AFD_CHECK(a.data != nullptr || a.numel() == 0, "add: a has no data");
}

// x: [T, H] f32 or act; rows: [S] i32; out: [S, H], x's dtype.
inline void checkGatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) {
  checkShape("gatherRows", "x", x, {-1, -1});
  checkAct("gatherRows", "x", x);
  checkDType("gatherRows", "out", out, x.dtype);
  checkShape("gatherRows", "rows", rows, {-1});
  checkDType("gatherRows", "rows", rows, DType::I32);
  checkShape("gatherRows", "out", out, {rows.dim(0), x.dim(1)});
}

// q, out: [T, nH, D]; caches: [numBlocks, blockSize, nKv, D].
inline void checkPagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache,
                                const AttentionBatch& batch, const Tensor& out) {
  checkShape("pagedAttention", "q", q, {-1, -1, -1});
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2);
  checkShape("pagedAttention", "kCache", kCache, {-1, -1, -1, D});
  checkShape("pagedAttention", "vCache", vCache, {kCache.dim(0), kCache.dim(1), kCache.dim(2), D});
  checkShape("pagedAttention", "out", out, {T, nH, D});
  checkShape("pagedAttention", "tokenSeq", batch.tokenSeq, {T});
  checkShape("pagedAttention", "positions", batch.positions, {T});
  checkShape("pagedAttention", "blockTables", batch.blockTables, {batch.numSeqs, batch.maxBlocksPerSeq});
}
}  // namespace afd::contract
