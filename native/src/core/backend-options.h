// What createBackend (runtime/registry.h) builds: the backend's name, its CPU threads or CUDA
// device, and the CUDA backend's kernel choices (the CPU backend ignores them). The
// defaults are the measured choices; the fields come from the JS engine options
// (binding/js-convert.cc), and a debugging override of core/debug-env.h may replace them.
#pragma once
#include <string>

namespace afd {

// Which family runs the CUDA backend's paged attention (cuda/attention.cuh).
enum class AttentionKernel : int {
  Auto = 0,        // the batch-size rule (per call: the backend's attentionKernel, else the rule)
  Simt = 1,        // CUDA-core kernels (any shape)
  TensorCore = 2,  // tensor-core kernels; as a per-call choice an unsupported shape is an error
};

// How the tensor-core prefill attention rounds its operands (cuda/attention-mma.cuh): split =
// q and the probabilities as bf16 hi + lo (two MMAs per product, ~1e-5 of f32 math); bf16 =
// rounded once (one MMA, ~1e-3 relative, what flash-attention and HF's bf16 models do).
// Decode keeps split: it is bound by the KV bytes, not the MMAs.
enum class AttentionPrecision : int { Split = 0, Bf16 = 1 };

// Which expert GEMM the CUDA backend's moeExperts runs (cuda/expert-gemm-cublas.h).
enum class ExpertGemmChoice { Ours, Cublas, Auto };

// Tokens from which ExpertGemmChoice::Auto picks cuBLAS grouped GEMM. Measured on one H200
// (the former expert-GEMM microbenchmark, Qwen3-30B-A3B experts, 2026-11-30,
// docs/benchmarks.md): cuBLAS grouped GEMM with its host copy of the counts beat our
// kernel at 256 tokens (0.39 vs 0.51 ms per layer) and 512 (0.41 vs 0.81), lost at 1-64.
// It is eager-only, so captured decode steps keep our kernel whatever the batch.
constexpr int kCublasExpertGemmMinTokens = 256;
constexpr int kMaxAttentionBlocksPerSm = 16;
constexpr int kMaxExpertGemmMinTokens = 1 << 30;

struct CudaOptions {
  // Preferred attention family where a call leaves the choice open: auto = tensor cores
  // for prefill and decode where the shape fits (attention.cuh), tc = tensor cores wherever
  // they fit, simt = the CUDA-core kernels only (MLA too: its partials, cuda/mla-attention-tc.cuh).
  // Shapes the tensor cores do not cover run on SIMT whatever this says.
  AttentionKernel attentionKernel = AttentionKernel::Auto;
  // Blocks per multiprocessor the attention split count aims for (1..16). Measured on one
  // H200 (fused decoder, Qwen3-30B-A3B shape, context 1024, interleaved runs): 1 vs 2 gives
  // batch 1 4.31 vs 4.30 ms, batch 8 10.43 vs 10.70, batch 64 21.24 vs 21.66; 4 was slower (22.17).
  int attentionBlocksPerSm = 1;
  // Operand rounding of the tensor-core prefill attention (AttentionPrecision above). bf16
  // since it was measured (one H100, qwen3-30b-a3b, 110 new tokens over 3,000 cached): the
  // prefix-hit step 23.19 vs 25.19 ms at batch 1, 80.17 vs 87.88 ms at batch 16, with the GPU
  // suite's attention conformance, prefix, golden, logprobs and engine groups passing.
  AttentionPrecision attentionPrecision = AttentionPrecision::Bf16;
  // ours: our grouped kernel always; cublas: cuBLAS grouped GEMM always (an error where it
  // cannot run); auto: cuBLAS from expertGemmMinTokens tokens on eager steps.
  ExpertGemmChoice expertGemm = ExpertGemmChoice::Auto;
  int expertGemmMinTokens = kCublasExpertGemmMinTokens;  // 1..2^30
};

// Creates a backend by name: "cpu" (threads: 0 = all cores) or "cuda" (device index).
struct BackendOptions {
  std::string name = "cpu";
  int threads = 0;
  int deviceIndex = 0;
  CudaOptions cuda;
};

// "auto" | "simt" | "tc"; anything else throws naming `what` (the option or variable).
AttentionKernel parseAttentionKernel(const std::string& name, const std::string& what);
// "split" | "bf16"; anything else throws naming `what`.
AttentionPrecision parseAttentionPrecision(const std::string& name, const std::string& what);
// "auto" | "ours" | "cublas"; anything else throws naming `what`.
ExpertGemmChoice parseExpertGemmChoice(const std::string& name, const std::string& what);
// Throws naming the field when a count is out of its range.
void validateCudaOptions(const CudaOptions& options);

}  // namespace afd
