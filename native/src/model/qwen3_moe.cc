// Qwen3-MoE (Qwen3MoeForCausalLM): GQA with q/k RMSNorm, softmax top-k router with
// norm_topk_prob, SiLU experts; layers listed in mlp_only_layers (or off the
// decoder_sparse_step grid) use a dense MLP.
#include "model/arch.h"

namespace afd {

const ArchDef& qwen3MoeArch() {
  static const ArchDef def = [] {
    ArchDef d;
    d.family = "qwen3_moe";
    d.hfArchitectures = {"Qwen3MoeForCausalLM"};
    d.hasMoe = true;
    d.hasDense = true;
    d.routerGate = "mlp.gate.weight";
    d.expertPrefix = "mlp.experts.";
    d.expertGate = "gate_proj.weight";
    d.expertUp = "up_proj.weight";
    d.expertDown = "down_proj.weight";
    return d;
  }();
  return def;
}

}  // namespace afd
