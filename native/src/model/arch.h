// Architecture definitions are data: how an HF checkpoint names each tensor and which
// layer kinds the family has. One file per family (qwen3_moe.cc, qwen3.cc, llama.cc,
// mixtral.cc, deepseek_v2.cc, deepseek_v3.cc) fills one ArchDef; the layer helpers
// (layers.cc, and mla-attention.cc for MLA) do the rest.
#pragma once
#include <string>
#include <vector>

namespace afd {

struct ArchDef {
  std::string family;                        // ModelConfigSpec.arch
  std::vector<std::string> hfArchitectures;  // accepted config.json architectures[0]
  bool hasMoe = false;                       // some layers may be MoE
  bool hasDense = true;                      // some layers may be dense
  // Tensor names relative to "model.layers.{L}.".
  std::string denseGate = "mlp.gate_proj.weight";
  std::string denseUp = "mlp.up_proj.weight";
  std::string denseDown = "mlp.down_proj.weight";
  std::string routerGate;                    // e.g. "mlp.gate.weight"
  std::string expertPrefix;                  // e.g. "mlp.experts." (then "{e}.")
  std::string expertGate, expertUp, expertDown;  // e.g. "gate_proj.weight"
  // DeepSeek-V2/V3: MLA attention (model/mla-attention.h) instead of q/k/v/o, shared
  // experts beside the routed ones, the gate's score correction bias.
  bool mla = false;
  std::string sharedExpertPrefix;  // e.g. "mlp.shared_experts." (then expertGate / Up / Down)
  std::string routerBias;          // e.g. "mlp.gate.e_score_correction_bias"
};

const ArchDef& qwen3MoeArch();
const ArchDef& qwen3Arch();
const ArchDef& llamaArch();
const ArchDef& mixtralArch();
const ArchDef& deepseekV2Arch();
const ArchDef& deepseekV3Arch();
// The tensor names both DeepSeek generations share (deepseek_v2.cc).
ArchDef deepseekArchDef(const char* family, const char* hfArchitecture);

// Looks the family up; throws with the list of supported families when unknown.
const ArchDef& findArch(const std::string& family);

}  // namespace afd
