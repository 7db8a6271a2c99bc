// The DeepSeek Backend ops on CUDA: not implemented yet (MLA decode over the paged latent
// cache, MLA prefill and the grouped router come with the CUDA half of issue 16). Each
// throws naming the op, so a DeepSeek model on --backend cuda fails at its first step
// with what to do instead.
#include "cuda/cuda-backend.h"

namespace afd::cuda {
namespace {

[[noreturn]] void notYet(const char* op) {
  AFD_FAIL(op << " (DeepSeek MLA / grouped routing) is not implemented on CUDA yet; use --backend cpu");
}

}  // namespace

void CudaBackend::mlaNormRope(Tensor&, Tensor&, const Tensor&, float, const Tensor&, const RopeParams&, bool) {
  notYet("mlaNormRope");
}
void CudaBackend::writeLatentCache(const Tensor&, const Tensor&, Tensor&) { notYet("writeLatentCache"); }
void CudaBackend::mlaAttention(const Tensor&, const Tensor&, const Tensor&, const AttentionBatch&, float, Tensor&) {
  notYet("mlaAttention");
}
void CudaBackend::moeGroupedRoute(const Tensor&, const Tensor*, const MoeRoutingParams&, Tensor&, Tensor&) {
  notYet("moeGroupedRoute");
}
void CudaBackend::scatterRouting(const Tensor&, const Tensor&, Tensor&) { notYet("scatterRouting"); }

}  // namespace afd::cuda
