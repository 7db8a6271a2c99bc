// The Backend interface: one virtual op per op family, implemented by cpu/ (reference,
// first-class) and cuda/. Every tensor passed to an op lives on the backend's device
// unless the comment says "host". Weights are bf16, f16 or f32 (read as f32 inside the
// op). Activations: the residual stream, attention's q / output and all logits are f32
// on every backend; the normed hidden states, the FFN input and output (what crosses the
// AFD wire) are in activationDtype(): f32 on the CPU (exact), bf16 on CUDA (f32
// accumulation). "act" below means f32 or bf16 (the CPU backend takes f32 only).
// Shapes use T = tokens, S = sequences (or sampled
// rows), H = hidden, V = vocab, E = experts, K = experts per token, nH / nKv = query /
// KV heads, D = head dim, I = MLP intermediate, N = output features.
// Ops may run asynchronously on a device stream; results are visible to the host after
// copyToHost() or synchronize().
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend-options.h"
#include "core/deepseek-ops.h"
#include "core/linear-attention-ops.h"
#include "core/logit-ops.h"
#include "core/shared-region.h"
#include "core/tensor.h"

namespace afd {

class Backend;

// Owning device allocation (RAII). Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend* backend, size_t bytes);
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }
  void reset();
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // Tensor view over the start of this buffer.
  Tensor view(DType t, std::initializer_list<int64_t> shape) const;
  // Makes the buffer hold at least `bytes` (reallocating twice that on `backend` when it
  // is smaller: the contents are lost).
  void growTo(Backend* backend, size_t bytes) {
    if (bytes_ < bytes) *this = Buffer(backend, bytes * 2);
  }

 private:
  Backend* backend_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Rotary embedding table of one model: inv_freq already scaled per the rope_scaling type.
struct RopeParams {
  // [R/2] f32: rotate-half (NeoX layout) over the first R <= D dims of each head; the
  // rest of the head passes through (partial RoPE, Qwen3-Next).
  Tensor invFreq;
  float attentionScale = 1;   // multiplies cos and sin (YaRN mscale; 1 otherwise)
};

// Which cache positions each query token may see. Token t belongs to sequence
// tokenSeq[t] and sits at position positions[t]; it attends causally to cache positions
// [0, positions[t]] of its sequence, found through the sequence's block table. The
// cache must already hold those positions (writeKvCache runs first in the same layer).
struct AttentionBatch {
  Tensor tokenSeq;      // [T] i32, index into blockTables rows
  Tensor positions;     // [T] i32
  Tensor blockTables;   // [S, maxBlocksPerSeq] i32 block ids
  int numSeqs = 0;
  int maxBlocksPerSeq = 0;
  int maxQueryLen = 0;  // longest run of query tokens of one sequence (1 = pure decode)
  int maxContextLen = 0;  // longest positions[t] + 1
};

// Weights of one routed expert: SiLU-gated MLP.
struct ExpertWeights {
  Tensor gate;  // [I, H]
  Tensor up;    // [I, H]
  Tensor down;  // [H, I]
};

// Routing and experts of one MoE layer for Backend::moe. Scratch tensors are the
// caller's (sized for T tokens); the default implementation runs matmul (unless logits
// are given) -> routerTopK -> moeExperts, backends may fuse them.
struct MoeArgs {
  const Tensor* routerWeight = nullptr;  // [E, H]; null when routerLogits are given
  const Tensor* routerLogits = nullptr;  // [T, E] f32 computed elsewhere (gate on attention); else null
  int topK = 1;
  bool normTopk = false;
  Tensor logits;         // [T, E] f32 scratch (router output when routerWeight is given)
  Tensor expertIds;      // [T, topK] i32 scratch
  Tensor expertWeights;  // [T, topK] f32 scratch
  const std::vector<ExpertWeights>* experts = nullptr;
};

// Host-side sampling settings of S rows (see shared/src/engine/step.ts).
struct SamplingBatch {
  const float* temperature = nullptr;  // [S]; 0 = greedy
  const int32_t* topK = nullptr;       // [S]; 0 = off
  const float* topP = nullptr;         // [S]; 1 = off
  const uint32_t* seeds = nullptr;     // [S]
  const int32_t* positions = nullptr;  // [S] position of the token being sampled
  const float* minP = nullptr;         // [S]; 0 = off; null = off for every row
  // Log-probabilities of the sampled tokens (request targets null: each output row's
  // chosen token is its logits row's sampled token), read back with the tokens; null = none.
  const LogprobRequest* logprobs = nullptr;
  LogprobRows logprobsOut{};
  // [S] penalty slot whose entry for the row's sampled token counts it (core/logit-ops.h,
  // PenaltySeeds), -1 = none; null = no row has one.
  const int32_t* penaltySlot = nullptr;
};

// A recorded sequence of device work replayed as one launch (a CUDA graph). Replays
// read and write the same device addresses that were used while capturing.
class CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
  // Enqueues the whole graph on the backend's stream (asynchronous).
  virtual void replay() = 0;
  // Kernel (and memset / copy) nodes recorded; 0 where the backend cannot tell.
  virtual size_t nodeCount() const { return 0; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu" | "cuda"
  virtual Device device() const = 0;
  // True when device memory is host memory: weights are used in place (zero copy).
  virtual bool sharesHostMemory() const = 0;
  // Worker threads the backend uses (CPU); 1 for device backends.
  virtual int threads() const { return 1; }
  // Dtype of the normed hidden states and FFN activations (see the file comment).
  virtual DType activationDtype() const { return DType::F32; }
  // Rows of the whole step the next ops belong to (0 = each op's own rows). A backend
  // whose kernel choices depend on the row count (CUDA: kernel family, attention splits,
  // cuBLAS vs its own GEMMs, the fused router) makes them for max(rows, stepRows), so a
  // DBO stage computes every row bit for bit as the unsplit step would.
  virtual void setStepRows(int64_t /*rows*/) {}

  // ---- memory -------------------------------------------------------------------
  virtual void* allocate(size_t bytes) = 0;  // throws afd::Error when out of memory
  // Device memory free now, in bytes; 0 where it is not tracked (the CPU backend).
  virtual uint64_t freeMemoryBytes() const { return 0; }
  virtual void release(void* ptr) = 0;
  virtual void copyToDevice(void* dst, const void* hostSrc, size_t bytes) = 0;
  virtual void copyToHost(void* hostDst, const void* src, size_t bytes) = 0;  // waits for prior ops
  virtual void copyDevice(void* dst, const void* src, size_t bytes) = 0;
  // Copies device ranges beside the step's ops and waits for them; thread-safe. For memory
  // no step in flight reads or writes (the blocks a KV import fills), so the copy neither
  // waits for the step nor waits behind it. Default: copyDevice each, then synchronize (a
  // backend whose ops run at once on the calling thread); CUDA: a stream of its own.
  struct DeviceCopy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  virtual void copyDeviceBeside(const std::vector<DeviceCopy>& copies);
  virtual void fillZero(void* dst, size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Dummy weights (--load-format dummy): element i = offset + scale * (2u - 1) with
  // u = dummyUniform(key, i) (core/dummy-weights.h), stored in t's dtype. The same key
  // gives the same bits on every backend. t: any float tensor on this device.
  virtual void fillRandom(Tensor& t, uint64_t key, float scale, float offset) = 0;

  // Starts (true) or stops (false) the device profiler's capture range, for a profiler run
  // with capture from start off (ncu --profile-from-start off, nsys --capture-range=cudaProfilerApi)
  // to see only the work in between. A backend without one ignores it.
  virtual void profilerRange(bool /*start*/) {}

  // ---- graph capture (optional; CUDA) ---------------------------------------------
  // Changes whenever the backend allocates or frees device memory (its own scratch
  // included): a captured graph is valid only while the epoch it was captured in holds.
  virtual uint64_t allocationEpoch() const { return 0; }
  virtual bool supportsGraphCapture() const { return false; }
  // Ops enqueued between beginCapture and endCapture are recorded, not run; they must
  // not synchronize, copy to the host or allocate. endCapture returns the graph;
  // abortCapture ends a failed capture (no throw) and discards what was recorded.
  virtual void beginCapture();
  virtual std::unique_ptr<CapturedGraph> endCapture();
  virtual void abortCapture() noexcept {}

  // ---- memory a peer process on this host maps (core/shared-region.h) --------------
  // "cpu" (a file in `dir`, mapped shared) or "cuda" (CUDA IPC); "" = this backend has none.
  virtual std::string sharedMemoryKind() const { return ""; }
  // A zero-filled region of `bytes`; throws naming the backend where there is no such memory.
  virtual std::unique_ptr<SharedRegion> allocateShared(size_t bytes, const std::string& dir);
  // Maps a region another process allocated (its handle and byte size); throws with the
  // system's reason when it cannot (another host, a freed region, a size that differs).
  virtual std::unique_ptr<SharedRegion> openShared(const std::vector<uint8_t>& handle, size_t bytes);

  // ---- ops ----------------------------------------------------------------------
  // out[t] = table[ids[t]].   ids: [T] i32; table: [V, H]; out: [T, H] f32.
  virtual void embedding(const Tensor& ids, const Tensor& table, Tensor& out) = 0;

  // out = x / rms(x) * weight, per row.   x: [T, H] f32; out: [T, H] act (may alias x
  // when f32); weight: [H].
  virtual void rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) = 0;

  // Fused residual add + norm: residual += delta; out = rmsNorm(residual).
  // delta: [T, H] act; residual: [T, H] f32 (in/out); out: [T, H] act (may alias delta).
  virtual void addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) = 0;

  // In place: optional per-head RMSNorm of q and k (Qwen3; qNorm/kNorm [D], null = off),
  // then rotary embedding (rotate-half over the first 2 x rope.invFreq.dim(0) dims) at positions.
  // q: [T, nH, D] f32; k: [T, nKv, D] f32; positions: [T] i32.
  virtual void qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm,
                          float eps, const RopeParams& rope) = 0;

  // kCache/vCache[slot / B, slot % B] = k[t] / v[t] with slot = slotMapping[t]; slot < 0 skips.
  // k, v: [T, nKv, D] f32; slotMapping: [T] i32; caches: [numBlocks, B, nKv, D] (f32, bf16 or f16).
  virtual void writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache,
                            Tensor& vCache) = 0;

  // The attention prologue of a layer in one op: from the fused projection
  // qkv = [q heads | k heads | v heads] per row, q = rope(qNorm(q)) into `q`, and
  // k = rope(kNorm(k)), v written to the cache slots (slot < 0 skips; norms null = off).
  // qkv: [T, (nH + 2 nKv) D] f32; q: [T, nH, D] f32; caches as in writeKvCache.
  virtual void qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping, const Tensor* qNorm,
                               const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q, Tensor& kCache,
                               Tensor& vCache) = 0;

  // Causal attention over the paged cache, prefill and decode alike (GQA: query head h
  // reads KV head h / (nH / nKv)).  q, out: [T, nH, D] f32; caches as above;
  // scale: softmax scale (usually 1/sqrt(D)).
  virtual void pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache, const AttentionBatch& batch,
                              float scale, Tensor& out) = 0;

  // out = x @ w^T (+ bias).   x: [T, K] f32 or act; w: [N, K]; bias: [N] or null; out: [T, N] f32.
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) = 0;

  // out += x @ w^T (+ bias): a projection added into the residual stream.
  // x: [T, K] f32 or act; w: [N, K]; bias: [N] or null; out: [T, N] f32 (in/out).
  virtual void matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) = 0;

  // out = down(silu(gate(x)) * up(x)).   x: [T, H] act; gate, up: [I, H]; down: [H, I];
  // out: [T, H], x's dtype.
  virtual void siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out) = 0;

  // Router: p = softmax(logits) per row; keep the k largest (ties: lower expert id);
  // when normTopk, renormalise the kept weights to sum to 1.
  // logits: [T, E] f32; expertIds: [T, K] i32; expertWeights: [T, K] f32.
  virtual void routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& expertIds, Tensor& expertWeights) = 0;

  // Routed experts: out[t] = sum_j expertWeights[t, j] * expert[expertIds[t, j]](x[t])
  // (+ addend[t]). x: [T, H] act; expertIds, expertWeights: [T, K]; experts: E entries;
  // out: [T, H], x's dtype; addend: null or [T, H] of out's dtype, added to the routed sum
  // (DeepSeek's shared experts: CUDA adds it in the weighted combine, not in a launch of its own).
  virtual void moeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                          const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend = nullptr) = 0;

  // A whole MoE layer (router unless logits are given, top-k, experts, weighted sum).
  // x: [T, H] act; out: [T, H], x's dtype. Default: the three ops above.
  virtual void moe(const Tensor& x, MoeArgs& args, Tensor& out);

  // out = a + b, elementwise (out may alias a or b). a, b, out: one dtype, f32 or act.
  virtual void add(const Tensor& a, const Tensor& b, Tensor& out) = 0;

  // out = x * sigmoid(gate), each gate value scaling a group of N / G consecutive
  // elements: out[t, i] = x[t, i] * sigmoid(gate[t, i / (N / G)]) (Qwen3-Next: the gated
  // attention output, G = N; the gated shared expert, G = 1). x, out (may alias x):
  // [T, N] f32 or act; gate: [T, G] f32, G dividing N. Optional: the default throws.
  virtual void sigmoidGate(const Tensor& x, const Tensor& gate, Tensor& out);

  // out[s] = x[rows[s]].   x: [T, H] f32 or act; rows: [S] i32; out: [S, H], x's dtype.
  virtual void gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) = 0;

  // logits = x @ w^T.   x: [S, H] f32 or act; w: [V, H]; logits: [S, V] f32.
  virtual void lmHead(const Tensor& x, const Tensor& w, Tensor& logits) { matmul(x, w, nullptr, logits); }

  // In place: logit bias, then repetition, frequency and presence penalties of each row
  // (core/logit-ops.h). logits: [S, V] f32; p: host lists over the S rows.
  virtual void processLogits(Tensor& logits, const LogitProcessing& p) = 0;

  // Clears the penalty table's rows of seeds.slots and writes their lists (core/logit-ops.h),
  // growing the table to the largest slot. vocab: the logits' width V.
  virtual void seedPenaltySlots(const PenaltySeeds& seeds, int64_t vocab) = 0;

  // Draws one token per row (greedy when temperature is 0, else temperature / top-k /
  // top-p / min-p sampling with the uniform drawn from hash(seed, position):
  // reproducible; the rule is cpu/sampling.cc's), and the log-probability rows of
  // params.logprobs. logits: [S, V] f32 on device; outTokens: host [S].
  virtual void sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) = 0;

  // Log-probability rows (core/logit-ops.h) with given chosen tokens (req.targets).
  // logits: [S, V] f32 on device; out: host.
  virtual void logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out) = 0;

  // ---- DeepSeek-V2/V3 (MLA attention, grouped routing; core/deepseek-ops.h) ----------
  // MLA shapes: L = kv_lora_rank (latent), R = qk_rope_head_dim, N = qk_nope_head_dim,
  // V = v_head_dim. The latent cache holds per token one row [L + R]: the normed latent
  // c, then the roped key kpe (shared by every head); no V.
  //
  // In place: RMSNorm of each token's latent kvA[t, :L] (weight kvNorm [L]) and RoPE of
  // the rope parts kvA[t, L:] and q[t, h, N:] at positions (interleaved: pairs
  // (x[2i], x[2i+1]), DeepSeek's layout; else rotate-half).
  // q: [T, nH, N + R] f32; kvA: [T, L + R] f32; positions: [T] i32; rope.invFreq: [R / 2].
  virtual void mlaNormRope(Tensor& q, Tensor& kvA, const Tensor& kvNorm, float eps, const Tensor& positions,
                           const RopeParams& rope, bool interleaved) = 0;
  // latentCache[slot / B, slot % B] = kvA[t] with slot = slotMapping[t]; slot < 0 skips.
  // kvA: [T, L + R] f32; latentCache: [numBlocks, B, L + R] (f32, bf16 or f16).
  virtual void writeLatentCache(const Tensor& kvA, const Tensor& slotMapping, Tensor& latentCache) = 0;
  // Causal MLA attention over the latent cache (batch as for pagedAttention). With
  // kvB = kv_b_proj [nH * (N + V), L] stacking per head W_UK_h [N, L] then W_UV_h [V, L],
  // head h sees key [W_UK_h c(p), kpe(p)] and value W_UV_h c(p) at cache position p:
  //   out[t, h] = sum_p softmax_p(scale * q[t, h] . key_h(p)) value_h(p).
  // A sequence with one query token (decode) runs absorbed: q_nope W_UK_h joins the
  // latent space, attention reads the cache rows as they are, W_UV_h applies after; a
  // sequence with more query tokens (prefill) may expand K and V from the latents.
  // q: [T, nH, N + R] f32 (roped); out: [T, nH, V] f32.
  virtual void mlaAttention(const Tensor& q, const Tensor& latentCache, const Tensor& kvB, const AttentionBatch& batch,
                            float scale, Tensor& out) = 0;
  // Grouped top-k router (DeepSeek): s = scoring(logits); choice = s + scoreBias (bias
  // [E] or null); GroupLimitedGreedy / NoauxTc keep the p.topkGroups groups of highest
  // max(s) / sum of the top-2 choice scores and choose only inside them; the p.k highest
  // choices win (ties: lower expert id); weights are their s (renormalised to sum 1 when
  // p.normTopk), times p.scale. logits: [T, E] f32; expertIds: [T, k] i32; expertWeights: [T, k] f32.
  virtual void moeGroupedRoute(const Tensor& logits, const Tensor* scoreBias, const MoeRoutingParams& p, Tensor& expertIds,
                        Tensor& expertWeights) = 0;
  // dense[t, e] = the weight of expert e in token t's choice, 0 for experts not chosen.
  // expertIds, expertWeights: [T, K]; dense: [T, E] f32.
  virtual void scatterRouting(const Tensor& expertIds, const Tensor& expertWeights, Tensor& dense) = 0;

  // ---- linear attention (Qwen3-Next / Qwen3.5 Gated DeltaNet; core/linear-attention-ops.h) ----
  // Optional: the defaults throw "<op> is not implemented on the <name> backend".
  // Shapes: C = conv channels, W = conv kernel width, Hk / Hv = key / value heads
  // (Hv a multiple of Hk: v-head h reads k-head h / (Hv / Hk)), Dk / Dv = their head dims.
  //
  // out = SiLU(depthwise causal conv of x) per sequence, no bias: out[t, c] =
  // silu(sum_j weight[c, j] * e[t + j]) over e = (the slot's W - 1 previous inputs, or
  // zeros) ++ the sequence's inputs. Afterwards the slot holds the last W - 1 entries of e.
  // x, out (may alias x): [T, C] f32; weight: [C, W]; convState: [numSlots, C, W - 1] f32 (in/out).
  virtual void causalConv1d(const Tensor& x, const Tensor& weight, Tensor& convState, const LinearAttentionBatch& batch,
                            Tensor& out);
  // The gated delta rule with in-kernel L2 norm of q and k (x / sqrt(sum x^2 + 1e-6)) and
  // q scaled by 1 / sqrt(Dk). Per sequence and v-head, token by token, state S [Dk, Dv]:
  // S *= exp(g); S += k (beta (v - k^T S)); out = q^T S.
  // q, k: [T, Hk, Dk] f32; v, out: [T, Hv, Dv] f32; g (log decay), beta: [T, Hv] f32;
  // state: [numSlots, Hv, Dk, Dv] f32 (in/out).
  virtual void gatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                              Tensor& state, const LinearAttentionBatch& batch, Tensor& out);
  // out = weight * x / sqrt(mean(x^2) + eps) * silu(z) per row of D (weight as-is, not 1 + w).
  // x, z, out (may alias x): [T, H, D] f32; weight: [D].
  virtual void rmsNormGated(const Tensor& x, const Tensor& z, const Tensor& weight, float eps, Tensor& out);
  // The delta rule's gates from the layer's projections (HF Qwen3NextGatedDeltaNet):
  // g = -exp(A_log) * softplus(a + dt_bias) (the log decay; softplus as torch's, x > 20
  // returned as is) and beta = sigmoid(b), in f32.
  // a, b, g, beta: [T, Hv] f32; aLog, dtBias: [Hv] (f32, bf16 or f16).
  virtual void gdnGating(const Tensor& a, const Tensor& b, const Tensor& aLog, const Tensor& dtBias, Tensor& g,
                         Tensor& beta);
  // Consecutive column ranges of x into separate tensors: outs[i] = x[:, c_i .. c_i + w_i)
  // with c_0 = 0, c_{i+1} = c_i + w_i and the widths summing to x's columns (the gdn layer
  // splits its fused projection and its conv output this way). x, outs: [T, *] f32, 1 to 4 outs.
  virtual void splitColumns(const Tensor& x, const std::vector<Tensor*>& outs);
};

// Records what enqueue() puts on the backend's stream as one graph (beginCapture ->
// enqueue -> endCapture). A failure aborts the capture and throws "<what>: <reason>;
// <advice>"; so does an allocation during the capture (it would leave the graph pointing
// at memory that moved).
std::unique_ptr<CapturedGraph> captureGraph(Backend& backend, const std::string& what, const std::string& advice,
                                            const std::function<void()>& enqueue);

}  // namespace afd
