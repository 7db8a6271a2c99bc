#include "model/gdn-attention.h"

#include <initializer_list>

namespace afd {

namespace {

// Rows of the grouped checkpoint projections concatenated as [in_proj_qkvz | in_proj_ba]
// (per key head h: qkvz [q Dk | k Dk | v r Dv | z r Dv], ba [b r | a r], r = Hv / Hk) in
// the fused order: every head's q, every head's k, then v, z, b and a likewise.
std::vector<int64_t> groupedRowOrder(const GdnConfig& g) {
  const int64_t Dk = g.keyHeadDim, r = g.numValueHeads / g.numKeyHeads, rv = r * g.valueHeadDim;
  const int64_t group = 2 * Dk + 2 * rv, baBase = g.numKeyHeads * group;
  std::vector<int64_t> order;
  auto take = [&](int64_t base, int64_t stride, int64_t offset, int64_t width) {
    for (int64_t h = 0; h < g.numKeyHeads; ++h)
      for (int64_t i = 0; i < width; ++i) order.push_back(base + h * stride + offset + i);
  };
  take(0, group, 0, Dk);             // q
  take(0, group, Dk, Dk);            // k
  take(0, group, 2 * Dk, rv);        // v
  take(0, group, 2 * Dk + rv, rv);   // z
  take(baBase, 2 * r, 0, r);         // b
  take(baBase, 2 * r, r, r);         // a
  return order;
}

}  // namespace

std::vector<FusedTensor> gdnFusedTensors(const ModelConfig& c) {
  std::vector<FusedTensor> groups;
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].attention != AttentionKind::Gdn) continue;
    if (c.gdn.grouped) {
      groups.push_back({layerSlot(L, slot::kGdnInProj), {layerSlot(L, slot::kInProjQkvz), layerSlot(L, slot::kInProjBa)},
                        groupedRowOrder(c.gdn)});
    } else {
      groups.push_back({layerSlot(L, slot::kGdnInProj),
                        {layerSlot(L, slot::kInProjQkv), layerSlot(L, slot::kInProjZ), layerSlot(L, slot::kInProjB),
                         layerSlot(L, slot::kInProjA)},
                        {}});
    }
  }
  return groups;
}

GdnAttention::GdnAttention(const ModelConfig& c, const WeightStore& store, Backend& backend) : c_(c), backend_(backend) {
  const GdnConfig& g = c.gdn;
  const int64_t H = c.hiddenSize, C = g.convDim(), V = g.valueDim(), Hv = g.numValueHeads;
  layers_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    if (c.layers[L].attention != AttentionKind::Gdn) continue;
    GdnLayerWeights& w = layers_[L];
    auto at = [L](const char* name) { return layerSlot(L, name); };
    // The split layout's members are read one by one too (their shapes, for the error
    // message); the grouped layout's regrouped members exist only as the fused slot.
    if (!g.grouped) {
      store.get(at(slot::kInProjQkv), {C, H});
      store.get(at(slot::kInProjZ), {V, H});
      store.get(at(slot::kInProjB), {Hv, H});
      store.get(at(slot::kInProjA), {Hv, H});
    }
    w.inProj = store.get(at(slot::kGdnInProj), {C + V + 2 * Hv, H});
    w.conv = store.get(at(slot::kConv1d), {C, 1, g.convKernel}).reshape({C, g.convKernel});
    w.aLog = store.get(at(slot::kALog), {Hv});
    w.dtBias = store.get(at(slot::kDtBias), {Hv});
    w.norm = store.get(at(slot::kGatedNorm), {g.valueHeadDim});
    w.out = store.get(at(slot::kOutProj), {H, V});
  }
}

void GdnAttention::reserve(int64_t T) {
  if (T <= scratchTokens_) return;
  const GdnConfig& g = c_.gdn;
  const int64_t C = g.convDim(), V = g.valueDim(), Hv = g.numValueHeads;
  // proj, mixed, z, b, a, q, k, v, g, beta, core.
  const int64_t perToken = (C + V + 2 * Hv) + C + V + 2 * Hv + C + 2 * Hv + V;
  scratch_ = Buffer(&backend_, static_cast<size_t>(T * perToken) * sizeof(float));
  scratchTokens_ = T;
}

void GdnAttention::forward(int layer, const AttentionStageInputs& in, AttentionStageTensors& t, Tensor& convState,
                           Tensor& deltaState) {
  const GdnLayerWeights& w = layers_[layer];
  const GdnConfig& g = c_.gdn;
  const int64_t T = t.hidden.dim(0), C = g.convDim(), K = g.keyDim(), V = g.valueDim(), Hv = g.numValueHeads;
  const int64_t Hk = g.numKeyHeads, Dk = g.keyHeadDim, Dv = g.valueHeadDim;
  reserve(T);
  float* next = static_cast<float*>(scratch_.data());
  auto carve = [&](std::initializer_list<int64_t> shape) {
    Tensor view(next, DType::F32, shape, backend_.device());
    next += view.numel();
    return view;
  };
  Tensor proj = carve({T, C + V + 2 * Hv}), mixed = carve({T, C}), z = carve({T, V}), b = carve({T, Hv}),
         a = carve({T, Hv}), q = carve({T, Hk, Dk}), k = carve({T, Hk, Dk}), v = carve({T, Hv, Dv}),
         decay = carve({T, Hv}), beta = carve({T, Hv}), core = carve({T, Hv, Dv});
  backend_.matmul(t.normed, w.inProj, nullptr, proj);
  backend_.splitColumns(proj, {&mixed, &z, &b, &a});
  backend_.causalConv1d(mixed, w.conv, convState, in.linear, mixed);
  Tensor q2 = q.reshape({T, K}), k2 = k.reshape({T, K}), v2 = v.reshape({T, V});
  backend_.splitColumns(mixed, {&q2, &k2, &v2});
  backend_.gdnGating(a, b, w.aLog, w.dtBias, decay, beta);
  backend_.gatedDeltaRule(q, k, v, decay, beta, deltaState, in.linear, core);
  Tensor z3 = z.reshape({T, Hv, Dv});
  backend_.rmsNormGated(core, z3, w.norm, static_cast<float>(c_.rmsNormEps), core);
  backend_.matmulAdd(core.reshape({T, V}), w.out, nullptr, t.hidden);
}

}  // namespace afd
