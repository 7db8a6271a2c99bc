// DeepSeek-V2 (DeepseekV2ForCausalLM; V2-Lite too): MLA attention (q_lora optional,
// kv_a / q_a layernorms, RoPE on the rope part, interleaved), dense MLPs in the first
// first_k_dense_replace layers, then MoE every moe_layer_freq layers: softmax greedy or
// group-limited-greedy routing, routed_scaling_factor, shared experts.
#include "model/arch.h"

namespace afd {

ArchDef deepseekArchDef(const char* family, const char* hfArchitecture) {
  ArchDef d;
  d.family = family;
  d.hfArchitectures = {hfArchitecture};
  d.hasMoe = true;
  d.hasDense = true;
  d.mla = true;
  d.routerGate = "mlp.gate.weight";
  d.routerBias = "mlp.gate.e_score_correction_bias";
  d.expertPrefix = "mlp.experts.";
  d.sharedExpertPrefix = "mlp.shared_experts.";
  d.expertGate = "gate_proj.weight";
  d.expertUp = "up_proj.weight";
  d.expertDown = "down_proj.weight";
  return d;
}

const ArchDef& deepseekV2Arch() {
  static const ArchDef def = deepseekArchDef("deepseek_v2", "DeepseekV2ForCausalLM");
  return def;
}

}  // namespace afd
