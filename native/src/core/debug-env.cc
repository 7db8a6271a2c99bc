#include "core/debug-env.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace afd {
namespace {

std::optional<std::string> variable(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

// A decimal integer in [lo, hi], whole string.
std::optional<int> integer(const char* name, long lo, long hi) {
  const std::optional<std::string> v = variable(name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v->c_str(), &end, 10);
  AFD_CHECK(*end == '\0' && n >= lo && n <= hi, name << " must be an integer in [" << lo << ", " << hi << "] (got \"" << *v << "\")");
  return static_cast<int>(n);
}

DebugEnv readDebugEnv() {
  DebugEnv d;
  d.graphsOff = variable("AFD_ENGINE_GRAPHS") == std::optional<std::string>("off");
  if (auto v = variable("AFD_CUDA_ATTENTION")) d.attentionKernel = parseAttentionKernel(*v, "AFD_CUDA_ATTENTION");
  d.attentionBlocksPerSm = integer("AFD_ATTENTION_BLOCKS_PER_SM", 1, kMaxAttentionBlocksPerSm);
  if (auto v = variable("AFD_ATTENTION_PRECISION")) d.attentionPrecision = parseAttentionPrecision(*v, "AFD_ATTENTION_PRECISION");
  if (auto v = variable("AFD_EXPERT_GEMM")) d.expertGemm = parseExpertGemmChoice(*v, "AFD_EXPERT_GEMM");
  d.expertGemmMinTokens = integer("AFD_EXPERT_GEMM_MIN_TOKENS", 1, kMaxExpertGemmMinTokens);
  d.pdlOff = variable("AFD_CUDA_PDL") == std::optional<std::string>("0");
  if (auto v = variable("AFD_GDN_KERNEL")) {
    AFD_CHECK(*v == "warps" || *v == "columns", "AFD_GDN_KERNEL must be warps or columns (got \"" << *v << "\")");
    d.gdnWarpKernel = *v == "warps";
  }
  d.faultFfnLayerDelayUs = integer("AFD_FAULT_FFN_LAYER_DELAY_US", 0, 10'000'000);
  return d;
}

}  // namespace

const DebugEnv& debugEnv() {
  // A throwing initializer leaves the static uninitialized: the next call reads again and
  // throws the same error.
  static const DebugEnv env = readDebugEnv();
  return env;
}

void applyDebugEnv(CudaOptions& o) {
  const DebugEnv& d = debugEnv();
  if (d.attentionKernel) o.attentionKernel = *d.attentionKernel;
  if (d.attentionBlocksPerSm) o.attentionBlocksPerSm = *d.attentionBlocksPerSm;
  if (d.attentionPrecision) o.attentionPrecision = *d.attentionPrecision;
  if (d.expertGemm) o.expertGemm = *d.expertGemm;
  if (d.expertGemmMinTokens) o.expertGemmMinTokens = *d.expertGemmMinTokens;
}

}  // namespace afd
