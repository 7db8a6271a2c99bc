// Mixtral (MixtralForCausalLM): every layer is MoE; router softmax top-k, always
// renormalised; experts w1 (gate), w3 (up), w2 (down).
#include "model/arch.h"

namespace afd {

const ArchDef& mixtralArch() {
  static const ArchDef def = [] {
    ArchDef d;
    d.family = "mixtral";
    d.hfArchitectures = {"MixtralForCausalLM"};
    d.hasMoe = true;
    d.hasDense = false;
    d.routerGate = "block_sparse_moe.gate.weight";
    d.expertPrefix = "block_sparse_moe.experts.";
    d.expertGate = "w1.weight";
    d.expertUp = "w3.weight";
    d.expertDown = "w2.weight";
    return d;
  }();
  return def;
}

}  // namespace afd
