#include "core/backend-options.h"

#include "core/error.h"

namespace afd {

AttentionKernel parseAttentionKernel(const std::string& name, const std::string& what) {
  if (name == "auto") return AttentionKernel::Auto;
  if (name == "simt") return AttentionKernel::Simt;
  if (name == "tc") return AttentionKernel::TensorCore;
  AFD_FAIL(what << " must be simt, tc or auto (got \"" << name << "\")");
}

AttentionPrecision parseAttentionPrecision(const std::string& name, const std::string& what) {
  if (name == "split") return AttentionPrecision::Split;
  if (name == "bf16") return AttentionPrecision::Bf16;
  AFD_FAIL(what << " must be split or bf16 (got \"" << name << "\")");
}

ExpertGemmChoice parseExpertGemmChoice(const std::string& name, const std::string& what) {
  if (name == "auto") return ExpertGemmChoice::Auto;
  if (name == "ours") return ExpertGemmChoice::Ours;
  if (name == "cublas") return ExpertGemmChoice::Cublas;
  AFD_FAIL(what << " must be ours, cublas or auto (got \"" << name << "\")");
}

void validateCudaOptions(const CudaOptions& o) {
  AFD_CHECK(o.attentionBlocksPerSm >= 1 && o.attentionBlocksPerSm <= kMaxAttentionBlocksPerSm,
            "attentionBlocksPerSm must be in [1, " << kMaxAttentionBlocksPerSm << "] (got " << o.attentionBlocksPerSm << ")");
  AFD_CHECK(o.expertGemmMinTokens >= 1 && o.expertGemmMinTokens <= kMaxExpertGemmMinTokens,
            "expertGemmMinTokens must be in [1, " << kMaxExpertGemmMinTokens << "] (got " << o.expertGemmMinTokens << ")");
}

}  // namespace afd
