#include "model/gqa-attention.h"

#include <cmath>

namespace afd {

namespace {

bool isGqa(AttentionKind kind) { return kind == AttentionKind::Gqa || kind == AttentionKind::GqaGated; }

// Rows of gqa_gated's concatenated [q_proj | k_proj | v_proj] (q_proj per head: D query
// rows, D gate rows) in the fused order: every head's query rows, k, v, every head's gate rows.
std::vector<int64_t> gatedRowOrder(const ModelConfig& c) {
  const int64_t D = c.headDim, nH = c.numHeads, kv = 2 * c.numKvHeads * D;
  std::vector<int64_t> order;
  for (int64_t h = 0; h < nH; ++h)
    for (int64_t i = 0; i < D; ++i) order.push_back(h * 2 * D + i);
  for (int64_t i = 0; i < kv; ++i) order.push_back(2 * nH * D + i);
  for (int64_t h = 0; h < nH; ++h)
    for (int64_t i = 0; i < D; ++i) order.push_back(h * 2 * D + D + i);
  return order;
}

}  // namespace

std::vector<FusedTensor> gqaFusedTensors(const ModelConfig& c) {
  std::vector<FusedTensor> groups;
  for (int L = 0; L < c.numLayers; ++L) {
    const AttentionKind kind = c.layers[L].attention;
    if (!isGqa(kind)) continue;
    const std::vector<int64_t> order = kind == AttentionKind::GqaGated ? gatedRowOrder(c) : std::vector<int64_t>{};
    groups.push_back({layerSlot(L, slot::kQkvProj), {layerSlot(L, slot::kQProj), layerSlot(L, slot::kKProj), layerSlot(L, slot::kVProj)}, order});
    groups.push_back({layerSlot(L, slot::kQkvBias), {layerSlot(L, slot::kQBias), layerSlot(L, slot::kKBias), layerSlot(L, slot::kVBias)}, order});
  }
  return groups;
}

GqaAttention::GqaAttention(const ModelConfig& c, const WeightStore& store, Backend& backend, const RopeParams& rope, AttentionKind kind)
    : c_(c), backend_(backend), rope_(rope) {
  const int64_t H = c.hiddenSize, D = c.headDim, qDim = c.numHeads * D, kvDim = c.numKvHeads * D;
  const bool gated = kind == AttentionKind::GqaGated;
  // gqa_gated's q_proj (and fused slot) carry the gate rows too.
  const int64_t qRows = gated ? 2 * qDim : qDim, fusedRows = qRows + 2 * kvDim, qkvRows = qDim + 2 * kvDim;
  layers_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].attention != kind) continue;
    GqaLayerWeights& w = layers_[L];
    auto at = [L](const char* name) { return layerSlot(L, name); };
    // Checked one by one for the error message, read through the fused group (gqa_gated's
    // regrouped members exist only as the group: the store checks their rows).
    if (!gated) {
      store.get(at(slot::kQProj), {qRows, H});
      store.get(at(slot::kKProj), {kvDim, H});
      store.get(at(slot::kVProj), {kvDim, H});
    }
    const Tensor fused = store.get(at(slot::kQkvProj), {fusedRows, H});
    w.qkv = fused.rows(0, qkvRows);
    if (gated) w.gate = fused.rows(qkvRows, fusedRows);
    w.o = store.get(at(slot::kOProj), {H, qDim});
    Tensor fusedBias;
    if (gated) {
      fusedBias = store.find(at(slot::kQkvBias), {fusedRows});
    } else if (!store.find(at(slot::kQBias), {qRows}).empty()) {
      store.get(at(slot::kKBias), {kvDim});
      store.get(at(slot::kVBias), {kvDim});
      fusedBias = store.get(at(slot::kQkvBias), {fusedRows});
    }
    if (!fusedBias.empty()) {
      w.qkvBias = fusedBias.rows(0, qkvRows);
      if (gated) w.gateBias = fusedBias.rows(qkvRows, fusedRows);
    }
    w.oBias = store.find(at(slot::kOBias), {H});
    w.qNorm = store.find(at(slot::kQNorm), {D});
    w.kNorm = store.find(at(slot::kKNorm), {D});
    AFD_CHECK(w.qNorm.empty() == w.kNorm.empty(),
              "layer " << L << ": the q/k head norms go together, but only " << (w.qNorm.empty() ? slot::kKNorm : slot::kQNorm)
                       << " is in the load spec");
  }
}

// q/k/v in one GEMM, q/k head norm, RoPE, KV-cache write, paged attention, the gate
// (gqa_gated); hidden += o_proj.
void GqaAttention::forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& kCache, Tensor& vCache) {
  const GqaLayerWeights& w = layers_[layer];
  const float eps = static_cast<float>(c_.rmsNormEps);
  const int64_t T = t.hidden.dim(0), nH = c_.numHeads, D = c_.headDim;
  // qkv: [T, (nH + 2 nKv) D] f32 in one GEMM; q normed + roped, k/v into the cache.
  backend_.matmul(t.normed, w.qkv, w.qkvBias.empty() ? nullptr : &w.qkvBias, t.qkv);
  backend_.qkNormRopeCache(t.qkv, in.positions, in.slotMapping, w.qNorm.empty() ? nullptr : &w.qNorm,
                           w.kNorm.empty() ? nullptr : &w.kNorm, eps, rope_, t.q, kCache, vCache);
  backend_.pagedAttention(t.q, kCache, vCache, in.batch, 1.0f / std::sqrt(static_cast<float>(D)), t.attn);
  Tensor attn = t.attn.reshape({T, nH * D});
  if (!w.gate.empty()) {
    if (T > gateTokens_) {
      gate_ = Buffer(&backend_, T * nH * D * sizeof(float));
      gateTokens_ = T;
    }
    Tensor gate = gate_.view(DType::F32, {T, nH * D});
    backend_.matmul(t.normed, w.gate, w.gateBias.empty() ? nullptr : &w.gateBias, gate);
    backend_.sigmoidGate(attn, gate, attn);
  }
  backend_.matmulAdd(attn, w.o, w.oBias.empty() ? nullptr : &w.oBias, t.hidden);
}

}  // namespace afd
