// Llama (LlamaForCausalLM; also Mistral-style dense checkpoints with the same names):
// GQA, optional attention bias, llama3 / linear / yarn RoPE scaling; dense MLP.
#include "model/arch.h"

namespace afd {

const ArchDef& llamaArch() {
  static const ArchDef def = [] {
    ArchDef d;
    d.family = "llama";
    d.hfArchitectures = {"LlamaForCausalLM", "MistralForCausalLM"};
    return d;
  }();
  return def;
}

}  // namespace afd
