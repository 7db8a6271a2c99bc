#include "cpu/cpu-backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/op-contracts.h"
#include "cpu/ops.h"
#include "cpu/shared-file-region.h"

namespace afd {

void* CpuBackend::allocate(size_t bytes) {
  // 64-byte alignment for vector loads; aligned_alloc needs a multiple of the alignment.
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  AFD_CHECK(p != nullptr, "out of host memory allocating " << bytes << " bytes; lower numKvBlocks or the batch size");
  return p;
}
void CpuBackend::release(void* ptr) { std::free(ptr); }
void CpuBackend::copyToDevice(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::copyToHost(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::copyDevice(void* dst, const void* src, size_t bytes) { std::memmove(dst, src, bytes); }
void CpuBackend::fillZero(void* dst, size_t bytes) { std::memset(dst, 0, bytes); }
std::unique_ptr<SharedRegion> CpuBackend::allocateShared(size_t bytes, const std::string& dir) {
  return createSharedFileRegion(bytes, dir);
}
std::unique_ptr<SharedRegion> CpuBackend::openShared(const std::vector<uint8_t>& handle, size_t bytes) {
  return openSharedFileRegion(handle, bytes);
}

void CpuBackend::embedding(const Tensor& ids, const Tensor& table, Tensor& out) { cpu::embedding(pool_, ids, table, out); }
void CpuBackend::rmsNorm(const Tensor& x, const Tensor& w, float eps, Tensor& out) { cpu::rmsNorm(pool_, x, w, eps, out); }
void CpuBackend::addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& w, float eps, Tensor& out) {
  cpu::addRmsNorm(pool_, delta, residual, w, eps, out);
}
void CpuBackend::qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm,
                            float eps, const RopeParams& rope) {
  cpu::qkNormRope(pool_, q, k, positions, qNorm, kNorm, eps, rope);
}
void CpuBackend::writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slots, Tensor& kc, Tensor& vc) {
  cpu::writeKvCache(pool_, k, v, slots, kc, vc);
}
void CpuBackend::fillRandom(Tensor& t, uint64_t key, float scale, float offset) {
  cpu::fillRandom(pool_, t, key, scale, offset);
}
void CpuBackend::qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slots, const Tensor* qNorm,
                                 const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q, Tensor& kc,
                                 Tensor& vc) {
  cpu::qkNormRopeCache(pool_, qkv, positions, slots, qNorm, kNorm, eps, rope, q, kc, vc);
}
void CpuBackend::pagedAttention(const Tensor& q, const Tensor& kc, const Tensor& vc, const AttentionBatch& batch,
                                float scale, Tensor& out) {
  cpu::pagedAttention(pool_, q, kc, vc, batch, scale, out);
}
void CpuBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  cpu::matmul(pool_, x, w, bias, out);
}
void CpuBackend::matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  cpu::matmulAdd(pool_, x, w, bias, out);
}
void CpuBackend::siluGatedMlp(const Tensor& x, const Tensor& g, const Tensor& u, const Tensor& d, Tensor& out) {
  cpu::siluGatedMlp(pool_, x, g, u, d, out);
}
void CpuBackend::routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& ids, Tensor& weights) {
  cpu::routerTopK(pool_, logits, k, normTopk, ids, weights);
}
void CpuBackend::moeExperts(const Tensor& x, const Tensor& ids, const Tensor& weights,
                            const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend) {
  if (addend != nullptr) contract::checkMoeExperts(x, ids, weights, out, addend);
  cpu::moeExperts(pool_, x, ids, weights, experts, out);
  if (addend != nullptr) cpu::add(pool_, out, *addend, out);
}
void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& out) { cpu::add(pool_, a, b, out); }
void CpuBackend::sigmoidGate(const Tensor& x, const Tensor& gate, Tensor& out) { cpu::sigmoidGate(pool_, x, gate, out); }
void CpuBackend::gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) { cpu::gatherRows(pool_, x, rows, out); }
void CpuBackend::processLogits(Tensor& logits, const LogitProcessing& p) { cpu::processLogits(pool_, logits, p, &penalties_); }
void CpuBackend::sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) {
  cpu::sample(pool_, logits, params, outTokens);
  penalties_.countSampled(params.penaltySlot, outTokens, logits.dim(0));
}
void CpuBackend::logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out) {
  cpu::logprobs(pool_, logits, req, out);
}


void CpuBackend::mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions,
                             const RopeParams& rope, bool interleaved) {
  cpu::mlaNormRope(pool_, q, kvA, kvNorm, eps, positions, rope, interleaved);
}
void CpuBackend::writeLatentCache(const Tensor& kvA, const Tensor& slots, Tensor& cache) {
  cpu::writeLatentCache(pool_, kvA, slots, cache);
}
void CpuBackend::mlaAttention(const Tensor& q, const Tensor& cache, const Tensor& kvB, const AttentionBatch& batch,
                              float scale, Tensor& out) {
  cpu::mlaAttention(pool_, q, cache, kvB, batch, scale, out);
}
void CpuBackend::moeGroupedRoute(const Tensor& logits, const Tensor* bias, const MoeRoutingParams& p, Tensor& ids,
                                 Tensor& weights) {
  cpu::moeGroupedRoute(pool_, logits, bias, p, ids, weights);
}
void CpuBackend::scatterRouting(const Tensor& ids, const Tensor& weights, Tensor& dense) {
  cpu::scatterRouting(pool_, ids, weights, dense);
}
void CpuBackend::causalConv1d(const Tensor& x, const Tensor& weight, Tensor& convState, const LinearAttentionBatch& batch,
                              Tensor& out) {
  cpu::causalConv1d(pool_, x, weight, convState, batch, out);
}
void CpuBackend::gatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                                Tensor& state, const LinearAttentionBatch& batch, Tensor& out) {
  cpu::gatedDeltaRule(pool_, q, k, v, g, beta, state, batch, out);
}
void CpuBackend::rmsNormGated(const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out) {
  cpu::rmsNormGated(pool_, x, z, weight, eps, out);
}
void CpuBackend::splitColumns(const Tensor& x, const std::vector<Tensor*>& outs) { cpu::splitColumns(pool_, x, outs); }
void CpuBackend::gdnGating(const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g,
                           Tensor& beta) {
  cpu::gdnGating(pool_, a, b, aLog, dtBias, g, beta);
}

}  // namespace afd
