// DeepSeek MLA (multi-head latent attention) on the CPU: the latent norm with the
// partial RoPE, the latent cache write, and causal attention over the latent cache
// (absorbed for one-token sequences, K/V expanded from the latents for prefill).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/deepseek-contracts.h"
#include "cpu/check.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/paged-batch.h"
#include "cpu/row-math.h"

namespace afd::cpu {

// q: [T, nH, N + R]; kvA: [T, L + R]; kvNorm: [L]; positions: [T] i32.
void mlaNormRope(ThreadPool& pool, Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions,
                 const RopeParams& rope, bool interleaved) {
  const contract::MlaDims d = contract::checkMlaNormRope(q, kvA, kvNorm, positions, rope);
  const int64_t T = q.dim(0), Dq = q.dim(2), W = kvA.dim(1), half = d.R / 2;
  std::vector<float> w(static_cast<size_t>(d.L));
  convertElems(kvNorm.data, kvNorm.dtype, 0, d.L, w.data());
  const float* invFreq = rope.invFreq.ptr<float>();
  const int32_t* pos = positions.ptr<int32_t>();
  void (*rotate)(float*, const float*, const float*, int64_t) = interleaved ? rotateInterleaved : rotateHalf;
  pool.parallelFor(T, 1, [&](int64_t b, int64_t e) {
    std::vector<float> cosv(static_cast<size_t>(half)), sinv(static_cast<size_t>(half));
    for (int64_t t = b; t < e; ++t) {
      ropeCosSin(pos[t], invFreq, half, rope.attentionScale, cosv.data(), sinv.data());
      float* kv = kvA.ptr<float>() + t * W;
      rmsNormRow(kv, w.data(), eps, d.L, kv);
      rotate(kv + d.L, cosv.data(), sinv.data(), half);
      for (int64_t h = 0; h < d.nH; ++h) rotate(q.ptr<float>() + (t * d.nH + h) * Dq + d.N, cosv.data(), sinv.data(), half);
    }
  });
}

// kvA: [T, W] f32; slotMapping: [T] i32; latentCache: [numBlocks, B, W].
void writeLatentCache(ThreadPool& pool, const Tensor& kvA, const Tensor& slotMapping, Tensor& cache) {
  contract::checkWriteLatentCache(kvA, slotMapping, cache);
  const int64_t T = kvA.dim(0), W = kvA.dim(1), numSlots = cache.dim(0) * cache.dim(1);
  const int32_t* slots = slotMapping.ptr<int32_t>();
  for (int64_t t = 0; t < T; ++t)
    AFD_CHECK(slots[t] < numSlots, "writeLatentCache: slot " << slots[t] << " of token " << t << " is outside the cache ("
                                                             << numSlots << " slots)");
  pool.parallelFor(T, 8, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      if (slots[t] >= 0) storeElems(kvA.ptr<float>() + t * W, cache.dtype, cache.data, slots[t] * W, W);
  });
}

namespace {

// One head's attention over the latent cache, for the tokens of one sequence.
class MlaHead {
 public:
  MlaHead(const contract::MlaDims& d, const Tensor& cache, const AttentionBatch& batch, float scale)
      : d_(d), cache_(cache), batch_(batch), scale_(scale), W_(d.L + d.R), Dq_(d.N + d.R), row_(static_cast<size_t>(W_)) {}

  // Converts head h's rows of kv_b_proj: W_UK_h [N, L], then W_UV_h [V, L].
  void loadHead(const Tensor& kvB, int64_t h) {
    h_ = h;
    w_.resize(static_cast<size_t>((d_.N + d_.V) * d_.L));
    for (int64_t r = 0; r < d_.N + d_.V; ++r) convertRow(kvB, h * (d_.N + d_.V) + r, &w_[r * d_.L]);
  }

  // Decode: q_nope W_UK_h joins the latent space, so the cache rows act as keys and
  // their latent part as values; W_UV_h maps the attended latent to the head output.
  void absorbed(const Tensor& q, int64_t t, Tensor& out) {
    const float* qv = q.ptr<float>() + (t * d_.nH + h_) * Dq_;
    qFull_.assign(static_cast<size_t>(W_), 0.0f);
    for (int64_t i = 0; i < d_.N; ++i) axpy(qv[i], &w_[i * d_.L], qFull_.data(), d_.L);
    std::copy(qv + d_.N, qv + Dq_, qFull_.begin() + d_.L);
    const int64_t ctx = position(t) + 1;
    scores_.resize(static_cast<size_t>(ctx));
    for (int64_t p = 0; p < ctx; ++p) scores_[p] = scale_ * dot(qFull_.data(), cacheRow(t, p), W_);
    const double sum = softmaxInPlace(ctx);
    latent_.assign(static_cast<size_t>(d_.L), 0.0f);
    for (int64_t p = 0; p < ctx; ++p) axpy(scores_[p], cacheRow(t, p), latent_.data(), d_.L);
    float* o = outRow(out, t);
    for (int64_t j = 0; j < d_.V; ++j) o[j] = static_cast<float>(dot(latent_.data(), &w_[(d_.N + j) * d_.L], d_.L) / sum);
  }

  // Prefill: K = [W_UK_h c, kpe] and V = W_UV_h c for every context position of the
  // sequence, then plain causal attention for each of its tokens.
  void expanded(const Tensor& q, const std::vector<int64_t>& tokens, Tensor& out) {
    int64_t ctx = 0;
    for (int64_t t : tokens) ctx = std::max(ctx, position(t) + 1);
    keys_.resize(static_cast<size_t>(ctx * Dq_));
    values_.resize(static_cast<size_t>(ctx * d_.V));
    for (int64_t p = 0; p < ctx; ++p) {
      const float* c = cacheRow(tokens[0], p);
      float* k = &keys_[p * Dq_];
      for (int64_t i = 0; i < d_.N; ++i) k[i] = dot(&w_[i * d_.L], c, d_.L);
      std::copy(c + d_.L, c + W_, k + d_.N);
      for (int64_t j = 0; j < d_.V; ++j) values_[p * d_.V + j] = dot(&w_[(d_.N + j) * d_.L], c, d_.L);
    }
    acc_.resize(static_cast<size_t>(d_.V));
    for (int64_t t : tokens) {
      const float* qv = q.ptr<float>() + (t * d_.nH + h_) * Dq_;
      const int64_t n = position(t) + 1;
      scores_.resize(static_cast<size_t>(n));
      for (int64_t p = 0; p < n; ++p) scores_[p] = scale_ * dot(qv, &keys_[p * Dq_], Dq_);
      const double sum = softmaxInPlace(n);
      std::fill(acc_.begin(), acc_.end(), 0.0f);
      for (int64_t p = 0; p < n; ++p) axpy(scores_[p], &values_[p * d_.V], acc_.data(), d_.V);
      float* o = outRow(out, t);
      for (int64_t j = 0; j < d_.V; ++j) o[j] = static_cast<float>(acc_[j] / sum);
    }
  }

 private:
  int64_t position(int64_t t) const { return batch_.positions.ptr<int32_t>()[t]; }
  float* outRow(Tensor& out, int64_t t) const { return out.ptr<float>() + (t * d_.nH + h_) * d_.V; }

  // Cache row [L + R] of context position p of token t's sequence (converted to f32).
  const float* cacheRow(int64_t t, int64_t p) {
    const int64_t B = cache_.dim(1);
    const int32_t seq = batch_.tokenSeq.ptr<int32_t>()[t];
    const int32_t block = batch_.blockTables.ptr<int32_t>()[seq * batch_.maxBlocksPerSeq + p / B];
    const int64_t elem = (static_cast<int64_t>(block) * B + p % B) * W_;
    if (cache_.dtype == DType::F32) return cache_.ptr<float>() + elem;
    convertElems(cache_.data, cache_.dtype, elem, W_, row_.data());
    return row_.data();
  }

  // scores_[0, n) -> exp(score - max); returns their sum.
  double softmaxInPlace(int64_t n) {
    const float mx = *std::max_element(scores_.begin(), scores_.begin() + n);
    double sum = 0;
    for (int64_t p = 0; p < n; ++p) sum += (scores_[p] = std::exp(scores_[p] - mx));
    return sum;
  }

  const contract::MlaDims& d_;
  const Tensor& cache_;
  const AttentionBatch& batch_;
  const float scale_;
  const int64_t W_, Dq_;
  int64_t h_ = 0;
  std::vector<float> w_, row_, qFull_, scores_, latent_, keys_, values_, acc_;
};

}  // namespace

// q: [T, nH, N + R] f32; latentCache: [numBlocks, B, L + R]; kvB: [nH * (N + V), L]; out: [T, nH, V] f32.
void mlaAttention(ThreadPool& pool, const Tensor& q, const Tensor& cache, const Tensor& kvB, const AttentionBatch& batch,
                  float scale, Tensor& out) {
  const contract::MlaDims d = contract::checkMlaAttention(q, cache, kvB, batch, out);
  const int64_t T = q.dim(0);
  checkPagedBatch("mlaAttention", batch, T, cache.dim(0), cache.dim(1));
  std::vector<std::vector<int64_t>> seqTokens(static_cast<size_t>(batch.numSeqs));
  for (int64_t t = 0; t < T; ++t) seqTokens[batch.tokenSeq.ptr<int32_t>()[t]].push_back(t);
  // One work item per head: its kv_b_proj rows are converted once and serve every sequence.
  pool.parallelFor(d.nH, 1, [&](int64_t h0, int64_t h1) {
    MlaHead head(d, cache, batch, scale);
    for (int64_t h = h0; h < h1; ++h) {
      head.loadHead(kvB, h);
      for (const auto& tokens : seqTokens) {
        if (tokens.size() == 1) head.absorbed(q, tokens[0], out);
        else if (!tokens.empty()) head.expanded(q, tokens, out);
      }
    }
  });
}

}  // namespace afd::cpu
