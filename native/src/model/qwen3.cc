// Qwen3 dense (Qwen3ForCausalLM): GQA with q/k RMSNorm; the dense MLP is the FFN half.
#include "model/arch.h"

namespace afd {

const ArchDef& qwen3Arch() {
  static const ArchDef def = [] {
    ArchDef d;
    d.family = "qwen3";
    d.hfArchitectures = {"Qwen3ForCausalLM"};
    return d;
  }();
  return def;
}

}  // namespace afd
