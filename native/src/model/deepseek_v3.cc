// DeepSeek-V3 (DeepseekV3ForCausalLM): the V2 layout with sigmoid scoring, noaux_tc
// grouped routing on score + e_score_correction_bias (the bias lives with the gate),
// renormalised top-k, and RoPE interleaved unless rope_interleave is false.
#include "model/arch.h"

namespace afd {

const ArchDef& deepseekV3Arch() {
  static const ArchDef def = deepseekArchDef("deepseek_v3", "DeepseekV3ForCausalLM");
  return def;
}

}  // namespace afd
