// The tensor slots a module binds (C++ mirror of TensorSlot in native/src/modelSpec.ts:
// the same strings). TypeScript's family table (native/src/checkpoint/families.ts) says
// which checkpoint tensor fills which slot; C++ only ever asks for slots.
#pragma once
#include <string>

namespace afd {

namespace slot {
// The model.
inline constexpr char kEmbed[] = "embed";            // [V, H]
inline constexpr char kFinalNorm[] = "final_norm";   // [H]
inline constexpr char kLmHead[] = "lm_head";         // [V, H]; absent: tied to embed
// Every layer (the attention half runs both norms).
inline constexpr char kInputNorm[] = "input_norm";                    // [H]
inline constexpr char kPostAttentionNorm[] = "post_attention_norm";   // [H]
// gqa attention (model/gqa-attention.h).
inline constexpr char kQProj[] = "attn.q_proj";
inline constexpr char kKProj[] = "attn.k_proj";
inline constexpr char kVProj[] = "attn.v_proj";
inline constexpr char kOProj[] = "attn.o_proj";
inline constexpr char kQBias[] = "attn.q_bias";
inline constexpr char kKBias[] = "attn.k_bias";
inline constexpr char kVBias[] = "attn.v_bias";
inline constexpr char kOBias[] = "attn.o_bias";
inline constexpr char kQNorm[] = "attn.q_norm";
inline constexpr char kKNorm[] = "attn.k_norm";
// The weight store fuses q/k/v rows into these (one GEMM); the spec never names them.
inline constexpr char kQkvProj[] = "attn.qkv_proj";
inline constexpr char kQkvBias[] = "attn.qkv_bias";
// mla attention (model/mla-attention.h); q_proj and o_proj as for gqa.
inline constexpr char kQAProj[] = "attn.q_a_proj";
inline constexpr char kQANorm[] = "attn.q_a_norm";
inline constexpr char kQBProj[] = "attn.q_b_proj";
inline constexpr char kKvAProj[] = "attn.kv_a_proj";
inline constexpr char kKvANorm[] = "attn.kv_a_norm";
inline constexpr char kKvBProj[] = "attn.kv_b_proj";
// gdn attention (model/gdn-attention.h): the input projection as the checkpoint stores
// it, grouped (Qwen3-Next) or split (Qwen3.5), then the conv, the decay parameters, the
// gated norm and the output projection.
inline constexpr char kInProjQkvz[] = "attn.in_proj_qkvz";
inline constexpr char kInProjBa[] = "attn.in_proj_ba";
inline constexpr char kInProjQkv[] = "attn.in_proj_qkv";
inline constexpr char kInProjZ[] = "attn.in_proj_z";
inline constexpr char kInProjB[] = "attn.in_proj_b";
inline constexpr char kInProjA[] = "attn.in_proj_a";
inline constexpr char kConv1d[] = "attn.conv1d";
inline constexpr char kDtBias[] = "attn.dt_bias";
inline constexpr char kALog[] = "attn.a_log";
inline constexpr char kGatedNorm[] = "attn.gated_norm";
inline constexpr char kOutProj[] = "attn.out_proj";
// The weight store fuses the input projection into this, rows [q | k | v | z | b | a].
inline constexpr char kGdnInProj[] = "attn.gdn_in_proj";
// dense FFN (model/dense-ffn.h).
inline constexpr char kGateProj[] = "ffn.gate_proj";
inline constexpr char kUpProj[] = "ffn.up_proj";
inline constexpr char kDownProj[] = "ffn.down_proj";
// moe / moe+shared FFN (model/moe-ffn.h): the router (and its score correction bias) go
// to the attention half when the gate runs there.
inline constexpr char kRouter[] = "ffn.router";
inline constexpr char kRouterBias[] = "ffn.router_bias";
inline constexpr char kSharedGateProj[] = "ffn.shared.gate_proj";
inline constexpr char kSharedUpProj[] = "ffn.shared.up_proj";
inline constexpr char kSharedDownProj[] = "ffn.shared.down_proj";
// moe+gated_shared: the shared expert's scalar gate [1, H] (its MLP: the ffn.shared.* slots).
inline constexpr char kSharedExpertGate[] = "ffn.shared_expert_gate";
// One routed expert (SlotRef::expert says which).
inline constexpr char kExpertGateProj[] = "ffn.experts.gate_proj";
inline constexpr char kExpertUpProj[] = "ffn.experts.up_proj";
inline constexpr char kExpertDownProj[] = "ffn.experts.down_proj";
}  // namespace slot

// A slot of the model (layer -1), or of one layer (and, for a routed expert, expert >= 0).
struct SlotRef {
  int layer = -1;
  std::string slot;
  int expert = -1;

  // Unique per tensor and readable in messages: "embed", "layers[3].attn.q_proj",
  // "layers[3].ffn.experts.up_proj[5]".
  std::string key() const {
    std::string k = layer < 0 ? slot : "layers[" + std::to_string(layer) + "]." + slot;
    return expert < 0 ? k : k + "[" + std::to_string(expert) + "]";
  }
};

inline SlotRef modelSlot(const char* name) { return SlotRef{-1, name, -1}; }
inline SlotRef layerSlot(int layer, const char* name) { return SlotRef{layer, name, -1}; }
inline SlotRef expertSlot(int layer, const char* name, int expert) { return SlotRef{layer, name, expert}; }

}  // namespace afd
