#include "cuda/moe-ops.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/op-contracts.h"
#include "cuda/cublas-api.h"
#include "cuda/cuda-check.h"
#include "cuda/expert-gemm-cublas.h"
#include "cuda/gemm.cuh"
#include "cuda/host-helpers.h"
#include "cuda/moe.cuh"

namespace afd::cuda {
namespace {

// Up to this many rows, routing (top-k + permutation) runs as one single-block launch.
constexpr int64_t kRouteOneBlockMaxRows = 64;

// Carves consecutive 256-byte aligned pieces out of one scratch allocation.
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += align256(count * sizeof(T));
    return p;
  }

 private:
  char* base_;
  size_t used_ = 0;
};

}  // namespace

MoeOps::MoeOps(StreamContext& ctx, DeviceMemory& memory, LinearOps& linear)
    : ctx_(ctx), memory_(memory), linear_(linear), routerCounter_("router done counter", 256) {
  AFD_CUDA_CHECK(cudaMemsetAsync(routerCounter_.data(), 0, routerCounter_.bytes(), ctx.stream()));
}

MoeOps::~MoeOps() = default;

void MoeOps::routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& expertIds, Tensor& expertWeights) {
  const int64_t T = logits.dim(0), E = logits.dim(1);
  contract::checkRouterTopK(logits, k, expertIds, expertWeights);
  moeTopK(logits.ptr<float>(), static_cast<int>(T), static_cast<int>(E), k, normTopk, expertIds.ptr<int32_t>(),
          expertWeights.ptr<float>(), ctx_.stream());
}

const void* const* MoeOps::expertTables(const std::vector<ExpertWeights>& experts) {
  std::vector<const void*> table(3 * experts.size(), nullptr);
  for (size_t e = 0; e < experts.size(); ++e) {
    table[e] = experts[e].gate.data;
    table[experts.size() + e] = experts[e].up.data;
    table[2 * experts.size() + e] = experts[e].down.data;
  }
  // Keyed by the list's address, checked against its pointers: a list freed and another
  // allocated at the same address must not reuse the old device table.
  auto it = expertTables_.find(experts.data());
  if (it != expertTables_.end() && it->second.host == table) return it->second.device.as<const void* const>();
  ctx_.refuseWhileCapturing("building an MoE expert pointer table");
  ctx_.bumpEpoch();
  DeviceBuffer buffer("MoE expert pointer table", table.size() * sizeof(void*));
  AFD_CUDA_CHECK(cudaMemcpyAsync(buffer.data(), table.data(), buffer.bytes(), cudaMemcpyHostToDevice, ctx_.stream()));
  ctx_.synchronize();
  ExpertTable& slot = expertTables_[experts.data()];
  slot.device = std::move(buffer);
  slot.host = std::move(table);
  return slot.device.as<const void* const>();
}

MoeOps::MoeScratch MoeOps::moeScratch(int64_t T, int E, int64_t K, int64_t H, int64_t I) {
  const int rows = static_cast<int>(T * K);
  MoeScratch s;
  s.slots = moeGridSlots(static_cast<int>(T), E, static_cast<int>(K));
  const size_t bytes = align256(sizeof(int32_t) * (E + 1)) + align256(sizeof(int32_t) * s.slots) +
                       2 * align256(sizeof(int32_t) * rows) + align256(4ull * rows * I) + align256(4ull * rows * H);
  Carver carve(memory_.scratch(bytes));
  s.perm.expertOffsets = carve.take<int32_t>(E + 1);
  s.perm.activeExperts = carve.take<int32_t>(s.slots);
  s.perm.sortedSourceRow = carve.take<int32_t>(rows);
  s.perm.pairPosition = carve.take<int32_t>(rows);
  s.act = carve.take<float>(static_cast<size_t>(rows) * I);
  s.expertOut = carve.take<float>(static_cast<size_t>(rows) * H);
  return s;
}

namespace {

// An expert whose weights are loaded (the shapes and dtypes of all of them).
const ExpertWeights& anyExpert(const std::vector<ExpertWeights>& experts) {
  auto it = std::find_if(experts.begin(), experts.end(), [](const ExpertWeights& e) { return !e.gate.empty(); });
  AFD_CHECK(it != experts.end(), "moe: no expert weights are loaded");
  return *it;
}

}  // namespace

void MoeOps::runExperts(const Tensor& x, const MoeScratch& s, const Tensor& expertWeights, const Tensor* addend,
                             const std::vector<ExpertWeights>& experts, int64_t K, Tensor& out, bool masked) {
  const int64_t T = x.dim(0), H = x.dim(1);
  const int E = static_cast<int>(experts.size());
  const ExpertWeights& any = anyExpert(experts);
  const int64_t I = any.gate.dim(0);
  const int rows = static_cast<int>(T * K);
  const bool bf16 = x.dtype == DType::BF16;
  const void* const* tables = expertTables(experts);
  // Grouped GEMM needs the per-expert counts on the host, so a captured step keeps our kernel.
  if (!ctx_.capturing() && !masked && useCublasExpertGemm(ctx_.options().expertGemm, static_cast<int>(ctx_.shapeRows(T)), ctx_.options().expertGemmMinTokens, static_cast<int>(H),
                                         static_cast<int>(I), any.gate.dtype == DType::BF16, linear_.cublas(), ctx_.stream())) {
    if (!cublasExperts_) cublasExperts_ = std::make_unique<CublasExpertGemm>(*linear_.cublas());
    cublasExperts_->run(moeExpertGemmArgs(x.data, !bf16, s.perm, tables, E, rows, static_cast<int>(H), static_cast<int>(I),
                                          s.expertOut),
                        ctx_.stream());
  } else {
    LinearArgs a;
    a.x = x.data;
    a.xIsF32 = !bf16;
    a.xRowIndex = s.perm.sortedSourceRow;
    a.wTable = tables;
    a.wUpTable = tables + E;
    a.wDtype = code(any.gate.dtype);
    a.groupOffsets = s.perm.expertOffsets;
    a.activeGroups = s.perm.activeExperts;
    a.rows = rows;
    a.n = static_cast<int>(I);
    a.k = static_cast<int>(H);
    a.out = s.act;
    a.ldOut = static_cast<int>(I);
    a.epilogue = bf16 ? Epilogue::SiluMulBf16 : Epilogue::SiluMulF32;
    gatedMlp(a, DownWeights{nullptr, tables + 2 * E, code(any.down.dtype)}, s.expertOut, s.slots, nullptr, ctx_.stream());
  }
  MoeCombineArgs c;
  c.expertOut = s.expertOut;
  c.pairPosition = s.perm.pairPosition;
  c.topkWeights = expertWeights.ptr<float>();
  c.out = out.data;
  c.outIsBf16 = out.dtype == DType::BF16;
  c.rows = static_cast<int>(T);
  c.hidden = static_cast<int>(H);
  c.topK = static_cast<int>(K);
  c.addend = addend != nullptr ? addend->data : nullptr;
  moeCombine(c, ctx_.stream());
}

void MoeOps::moeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                             const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend) {
  permuteAndRunExperts(x, expertIds, expertWeights, experts, out, addend, false);
}

void MoeOps::moeExpertsMasked(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                                   const std::vector<ExpertWeights>& experts, Tensor& out) {
  permuteAndRunExperts(x, expertIds, expertWeights, experts, out, nullptr, true);
}

void MoeOps::permuteAndRunExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                                       const std::vector<ExpertWeights>& experts, Tensor& out, const Tensor* addend,
                                       bool masked) {
  const int64_t T = x.dim(0), H = x.dim(1), K = expertIds.dim(1);
  const int E = static_cast<int>(experts.size());
  contract::checkMoeExperts(x, expertIds, expertWeights, out, addend);
  if (T == 0) return;
  const MoeScratch s = moeScratch(T, E, K, H, anyExpert(experts).gate.dim(0));
  moePermute(expertIds.ptr<int32_t>(), static_cast<int>(T), E, static_cast<int>(K), s.slots, s.perm, ctx_.stream());
  runExperts(x, s, expertWeights, addend, experts, K, out, masked);
}

void MoeOps::moe(const Tensor& x, MoeArgs& a, Tensor& out) {
  AFD_CHECK(a.experts != nullptr, "moe: no experts given");
  AFD_CHECK((a.routerWeight != nullptr) != (a.routerLogits != nullptr), "moe: give either the router weight or precomputed router logits");
  const int64_t T = x.dim(0), H = x.dim(1), K = a.topK;
  const int E = static_cast<int>(a.experts->size());
  contract::checkMoeExperts(x, a.expertIds, a.expertWeights, out);
  if (T == 0) return;
  int32_t* ids = a.expertIds.ptr<int32_t>();
  float* weights = a.expertWeights.ptr<float>();
  const int64_t I = anyExpert(*a.experts).gate.dim(0);
  const bool fused = a.routerWeight != nullptr && x.dtype == DType::BF16 && a.routerWeight->dtype == DType::BF16 &&
                     moeRouterRouteSupported(static_cast<int>(T), static_cast<int>(H), E, static_cast<int>(K)) &&
                     moeRouterRouteSupported(static_cast<int>(ctx_.shapeRows(T)), static_cast<int>(H), E, static_cast<int>(K));
  if (fused) {
    const MoeScratch s = moeScratch(T, E, K, H, I);
    const MoeRouterRouteArgs ra{x.data, a.routerWeight->data, a.logits.ptr<float>(), static_cast<int>(T), static_cast<int>(H),
                                E, static_cast<int>(K), a.normTopk, ids, weights, s.slots, s.perm,
                                routerCounter_.as<int32_t>()};
    moeRouterRoute(ra, ctx_.stream());
    runExperts(x, s, a.expertWeights, nullptr, *a.experts, K, out);
    return;
  }
  const Tensor* logits = a.routerLogits;
  if (a.routerWeight != nullptr) {
    linear_.matmul(x, *a.routerWeight, nullptr, a.logits);  // before the scratch is carved (an f32 GEMM may grow it)
    logits = &a.logits;
  }
  contract::checkRouterTopK(*logits, static_cast<int>(K), a.expertIds, a.expertWeights);
  const MoeScratch s = moeScratch(T, E, K, H, I);
  if (ctx_.shapeRows(T) <= kRouteOneBlockMaxRows) {
    moeRoute(logits->ptr<float>(), static_cast<int>(T), E, static_cast<int>(K), a.normTopk, ids, weights, s.slots, s.perm,
             ctx_.stream());
  } else {
    moeTopK(logits->ptr<float>(), static_cast<int>(T), E, static_cast<int>(K), a.normTopk, ids, weights, ctx_.stream());
    moePermute(ids, static_cast<int>(T), E, static_cast<int>(K), s.slots, s.perm, ctx_.stream());
  }
  runExperts(x, s, a.expertWeights, nullptr, *a.experts, K, out);
}

}  // namespace afd::cuda
