// Building each half from the weight store: tensor names come from the ArchDef, shapes
// from the config; a missing or misshapen tensor is an error naming it.
#include <algorithm>
#include <string>

#include "model/model.h"
#include "model/rope-table.h"

namespace afd {
namespace {

std::string layerName(int layer, const std::string& rest) { return "model.layers." + std::to_string(layer) + "." + rest; }

}  // namespace

std::vector<FusedTensor> fusedTensors(const ModelConfig& c) {
  std::vector<FusedTensor> groups;
  if (c.mla.enabled()) return groups;  // MLA has no q/k/v projections
  for (int L = 0; L < c.numLayers; ++L) {
    for (const char* kind : {"weight", "bias"}) {
      const std::string k = kind;
      if (k == "bias" && !c.attentionBias) continue;
      groups.push_back({layerName(L, "self_attn.qkv_proj." + k),
                        {layerName(L, "self_attn.q_proj." + k), layerName(L, "self_attn.k_proj." + k),
                         layerName(L, "self_attn.v_proj." + k)}});
    }
  }
  return groups;
}

AttentionModel::AttentionModel(const ModelConfig& c, const ArchDef& arch, const WeightStore& store, Backend& backend,
                               bool gateOnAttention)
    : config_(c), backend_(backend) {
  AFD_CHECK(arch.mla == c.mla.enabled(), arch.family << (arch.mla ? " needs" : " has no") << " MLA settings (config.mla)");
  const int64_t H = c.hiddenSize, D = c.headDim, qDim = c.numHeads * D, kvDim = c.numKvHeads * D;
  embed_ = store.get("model.embed_tokens.weight", {c.vocabSize, H});
  finalNorm_ = store.get("model.norm.weight", {H});
  lmHead_ = store.find("lm_head.weight", {c.vocabSize, H});
  if (lmHead_.empty()) {
    AFD_CHECK(c.tieWordEmbeddings, "tensor lm_head.weight is missing and tie_word_embeddings is false; the checkpoint is incomplete");
    lmHead_ = embed_;
  }
  layers_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    AttentionLayer& a = layers_[L];
    a.inputNorm = store.get(layerName(L, "input_layernorm.weight"), {H});
    a.postNorm = store.get(layerName(L, "post_attention_layernorm.weight"), {H});
    if (gateOnAttention && c.moeLayers[L]) {
      a.routerGate = store.get(layerName(L, arch.routerGate), {c.numExperts, H});
      if (c.routing.scoreCorrectionBias) a.routerBias = store.get(layerName(L, arch.routerBias), {c.numExperts});
    }
    if (arch.mla) continue;  // MlaAttention maps the attention weights
    // Checked one by one for the error message, read through the fused group.
    store.get(layerName(L, "self_attn.q_proj.weight"), {qDim, H});
    store.get(layerName(L, "self_attn.k_proj.weight"), {kvDim, H});
    store.get(layerName(L, "self_attn.v_proj.weight"), {kvDim, H});
    a.qkv = store.get(layerName(L, "self_attn.qkv_proj.weight"), {qDim + 2 * kvDim, H});
    a.o = store.get(layerName(L, "self_attn.o_proj.weight"), {H, qDim});
    if (c.attentionBias) {
      store.get(layerName(L, "self_attn.q_proj.bias"), {qDim});
      store.get(layerName(L, "self_attn.k_proj.bias"), {kvDim});
      store.get(layerName(L, "self_attn.v_proj.bias"), {kvDim});
      a.qkvBias = store.get(layerName(L, "self_attn.qkv_proj.bias"), {qDim + 2 * kvDim});
      a.oBias = store.find(layerName(L, "self_attn.o_proj.bias"), {H});
    }
    if (c.qkNorm) {
      a.qNorm = store.get(layerName(L, "self_attn.q_norm.weight"), {D});
      a.kNorm = store.get(layerName(L, "self_attn.k_norm.weight"), {D});
    }
  }
  if (arch.mla) mla_ = std::make_unique<MlaAttention>(c, store, backend);
  if (gateOnAttention && c.routing.grouped) router_ = std::make_unique<GroupedRouter>(c, backend);
  const std::vector<float> inv = ropeInvFreq(c);
  invFreq_ = Buffer(&backend, inv.size() * sizeof(float));
  backend.copyToDevice(invFreq_.data(), inv.data(), inv.size() * sizeof(float));
  rope_.invFreq = invFreq_.view(DType::F32, {static_cast<int64_t>(inv.size())});
  rope_.attentionScale = ropeAttentionScale(c);
}

FfnModel::FfnModel(const ModelConfig& c, const ArchDef& arch, const WeightStore& store, Backend& backend,
                   bool gateOnAttention, ExpertRange experts)
    : config_(c), backend_(backend), gateOnAttention_(gateOnAttention), experts_(experts) {
  AFD_CHECK(experts.start >= 0 && experts.start <= experts.end && experts.end <= std::max(0, c.numExperts),
            "expert range [" << experts.start << ", " << experts.end << ") is outside the model's " << c.numExperts << " experts");
  const int64_t H = c.hiddenSize;
  layers_.resize(c.numLayers);
  for (int L = 0; L < c.numLayers; ++L) {
    FfnLayer& f = layers_[L];
    f.moe = c.moeLayers[L];
    if (!f.moe) {
      AFD_CHECK(arch.hasDense, "layer " << L << " is dense but " << arch.family << " has only MoE layers; check moeLayers");
      const int64_t I = c.intermediateSize;
      f.gate = store.get(layerName(L, arch.denseGate), {I, H});
      f.up = store.get(layerName(L, arch.denseUp), {I, H});
      f.down = store.get(layerName(L, arch.denseDown), {H, I});
      continue;
    }
    AFD_CHECK(arch.hasMoe, "layer " << L << " is MoE but " << arch.family << " is a dense architecture; check moeLayers");
    const int64_t I = c.moeIntermediateSize;
    if (!gateOnAttention) f.routerGate = store.get(layerName(L, arch.routerGate), {c.numExperts, H});
    if (!gateOnAttention && c.routing.scoreCorrectionBias) f.routerBias = store.get(layerName(L, arch.routerBias), {c.numExperts});
    if (c.routing.numSharedExperts > 0) {
      const int64_t S = c.routing.sharedIntermediateSize;
      f.shared.gate = store.get(layerName(L, arch.sharedExpertPrefix + arch.expertGate), {S, H});
      f.shared.up = store.get(layerName(L, arch.sharedExpertPrefix + arch.expertUp), {S, H});
      f.shared.down = store.get(layerName(L, arch.sharedExpertPrefix + arch.expertDown), {H, S});
    }
    f.experts.resize(c.numExperts);
    for (int e = experts.start; e < experts.end; ++e) {  // the others stay empty (expert parallelism)
      const std::string p = arch.expertPrefix + std::to_string(e) + ".";
      f.experts[e].gate = store.get(layerName(L, p + arch.expertGate), {I, H});
      f.experts[e].up = store.get(layerName(L, p + arch.expertUp), {I, H});
      f.experts[e].down = store.get(layerName(L, p + arch.expertDown), {H, I});
    }
  }
  if (c.routing.grouped) router_ = std::make_unique<GroupedRouter>(c, backend);
}

}  // namespace afd
