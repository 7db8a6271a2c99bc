#include "model/arch.h"

#include "core/error.h"

namespace afd {

const ArchDef& findArch(const std::string& family) {
  for (const ArchDef* d : {&qwen3MoeArch(), &qwen3Arch(), &llamaArch(), &mixtralArch(), &deepseekV2Arch(), &deepseekV3Arch()})
    if (d->family == family) return *d;
  AFD_FAIL("unsupported architecture family \"" << family
                                                << "\" (supported: qwen3_moe, qwen3, llama, mixtral, deepseek_v2, deepseek_v3)");
}

}  // namespace afd
