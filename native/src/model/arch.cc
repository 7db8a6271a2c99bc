#include "model/arch.h"

#include "core/error.h"

namespace afd {

const ArchDef& findArch(const std::string& family) {
  for (const ArchDef* d : {&qwen3MoeArch(), &qwen3Arch(), &llamaArch(), &mixtralArch()})
    if (d->family == family) return *d;
  AFD_FAIL("unsupported architecture family \"" << family << "\" (supported: qwen3_moe, qwen3, llama, mixtral)");
}

}  // namespace afd
