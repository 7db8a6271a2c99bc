#include "cuda/expert-gemm-cublas.h"

#include <stdexcept>
#include <string>

#include "cuda/cuda-check.h"
#include "cuda/host-helpers.h"

namespace afd::cuda {
namespace {

size_t scratchBytes(int rows, int numExperts, int hidden, int inter, bool outIsF32) {
  const size_t r = static_cast<size_t>(rows);
  return align256(r * hidden * 2) + align256(r * 2 * inter * 2) + align256(r * inter * 2) +
         (outIsF32 ? align256(r * hidden * 2) : 0) + 6 * align256(sizeof(void*) * 2 * numExperts);
}

void validate(const CublasExpertGemmArgs& a) {
  if (a.x == nullptr || a.sortedSourceRow == nullptr || a.expertOffsets == nullptr || a.activeExperts == nullptr ||
      a.out == nullptr) {
    throw std::invalid_argument("cuBLAS expert GEMM: x, sortedSourceRow, expertOffsets, activeExperts and out must be given");
  }
  const ExpertWeightsView& w = a.weights;
  if (w.table == nullptr && (w.gate == nullptr || w.up == nullptr || w.down == nullptr || w.expertStride <= 0)) {
    throw std::invalid_argument("cuBLAS expert GEMM: weights need a pointer table or gate/up/down bases with a stride");
  }
  if (a.numExperts <= 0 || a.rows < 0 || a.hidden <= 0 || a.inter <= 0 || a.hidden % 8 != 0 || a.inter % 8 != 0) {
    throw std::invalid_argument("cuBLAS expert GEMM: bad shape experts=" + std::to_string(a.numExperts) +
                                " rows=" + std::to_string(a.rows) + " hidden=" + std::to_string(a.hidden) +
                                " inter=" + std::to_string(a.inter) +
                                " (hidden and inter must be multiples of 8 for 16-byte aligned bf16 rows)");
  }
}

// Row counts from host offsets, checked against the batch.
void checkOffsets(const int32_t* offsets, const CublasExpertGemmArgs& a) {
  if (offsets[0] != 0 || offsets[a.numExperts] != a.rows) {
    throw std::runtime_error("cuBLAS expert GEMM: expert offsets cover [" + std::to_string(offsets[0]) + ", " +
                             std::to_string(offsets[a.numExperts]) + ") but the batch has " + std::to_string(a.rows) +
                             " routed rows; the host offsets do not belong to this permutation");
  }
  for (int e = 0; e < a.numExperts; ++e) {
    if (offsets[e + 1] < offsets[e]) {
      throw std::runtime_error("cuBLAS expert GEMM: expert offsets decrease at expert " + std::to_string(e));
    }
  }
}

}  // namespace

CublasExpertGemm::CublasExpertGemm(const CublasHandle& cublas) : cublas_(cublas) {}

CublasExpertGemm::~CublasExpertGemm() {
  if (pinnedOffsets_ != nullptr) cudaFreeHost(pinnedOffsets_);
}

void CublasExpertGemm::reserve(int rows, int numExperts, int hidden, int inter, bool outIsF32) {
  const size_t bytes = scratchBytes(rows, numExperts, hidden, inter, outIsF32);
  if (bytes > scratch_.bytes()) {
    AFD_CUDA_CHECK(cudaDeviceSynchronize());  // the old scratch may still be in use by queued work
    scratch_ = DeviceBuffer("cuBLAS expert GEMM scratch (" + std::to_string(rows) + " routed rows)", bytes);
  }
  if (pinnedCount_ < numExperts + 1) {
    if (pinnedOffsets_ != nullptr) AFD_CUDA_CHECK(cudaFreeHost(pinnedOffsets_));
    pinnedOffsets_ = nullptr;
    pinnedCount_ = 0;
    AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&pinnedOffsets_), sizeof(int32_t) * (numExperts + 1),
                                 cudaHostAllocDefault));
    pinnedCount_ = numExperts + 1;
  }
}

CublasExpertGemm::Scratch CublasExpertGemm::carve(const CublasExpertGemmArgs& a) {
  reserve(a.rows, a.numExperts, a.hidden, a.inter, a.outIsF32);
  char* p = static_cast<char*>(scratch_.data());
  auto take = [&p](size_t bytes) {
    void* at = p;
    p += align256(bytes);
    return at;
  };
  const size_t r = static_cast<size_t>(a.rows);
  Scratch s;
  s.xPerm = take(r * a.hidden * 2);
  s.gu = take(r * 2 * a.inter * 2);
  s.act = take(r * a.inter * 2);
  if (a.outIsF32) s.outBf16 = take(r * a.hidden * 2);
  const size_t pairBytes = sizeof(void*) * 2 * a.numExperts;
  s.pointers.guX = static_cast<const void**>(take(pairBytes));
  s.pointers.guW = static_cast<const void**>(take(pairBytes));
  s.pointers.guOut = static_cast<void**>(take(pairBytes));
  s.pointers.downX = static_cast<const void**>(take(pairBytes));
  s.pointers.downW = static_cast<const void**>(take(pairBytes));
  s.pointers.downOut = static_cast<void**>(take(pairBytes));
  return s;
}

const int32_t* CublasExpertGemm::hostOffsets(const CublasExpertGemmArgs& a, cudaStream_t stream) {
  if (a.hostExpertOffsets != nullptr) return a.hostExpertOffsets;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  AFD_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    throw std::runtime_error(
        "cuBLAS expert GEMM cannot run inside a CUDA graph capture: grouped GEMM needs the per-expert row counts on "
        "the host (a device->host copy and a stream sync per layer); use expertGemm \"ours\" (AFD_EXPERT_GEMM=ours) for captured steps");
  }
  reserve(a.rows, a.numExperts, a.hidden, a.inter, a.outIsF32);
  AFD_CUDA_CHECK(cudaMemcpyAsync(pinnedOffsets_, a.expertOffsets, sizeof(int32_t) * (a.numExperts + 1),
                                 cudaMemcpyDeviceToHost, stream));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return pinnedOffsets_;
}

void CublasExpertGemm::run(const CublasExpertGemmArgs& a, cudaStream_t stream) {
  validate(a);
  if (a.rows == 0) return;
  const int32_t* offsets = hostOffsets(a, stream);
  checkOffsets(offsets, a);
  // One group per run of consecutive active experts with the same row count (at decode
  // batch 1 every expert has one row: one group), in the order of activeExperts.
  gateUpPlan_.clear();
  downPlan_.clear();
  int active = 0, runCount = 0, runLength = 0;
  auto flush = [&] {
    if (runLength == 0) return;
    gateUpPlan_.add(runCount, a.inter, a.hidden, 2 * a.inter, 2 * runLength);
    downPlan_.add(runCount, a.hidden, a.inter, a.hidden, runLength);
    runLength = 0;
  };
  for (int e = 0; e < a.numExperts; ++e) {
    const int count = offsets[e + 1] - offsets[e];
    if (count == 0) continue;
    if (count != runCount) flush();
    runCount = count;
    ++runLength;
    ++active;
  }
  flush();
  lastActive_ = active;
  const Scratch s = carve(a);
  void* outRows = a.outIsF32 ? s.outBf16 : a.out;
  gatherRowsToBf16(a.x, a.xIsF32, a.sortedSourceRow, a.rows, a.hidden, s.xPerm, stream);
  buildExpertPointers(a.expertOffsets, a.activeExperts, active, a.numExperts, a.weights, s.xPerm, s.gu, s.act, outRows,
                      a.hidden, a.inter, s.pointers, stream);
  cublas_.groupedLinear(gateUpPlan_, s.pointers.guX, s.pointers.guW, s.pointers.guOut);
  siluMulBf16(s.gu, a.rows, a.inter, s.act, stream);
  cublas_.groupedLinear(downPlan_, s.pointers.downX, s.pointers.downW, s.pointers.downOut);
  if (a.outIsF32) widenBf16ToF32(s.outBf16, static_cast<size_t>(a.rows) * a.hidden, static_cast<float*>(a.out), stream);
}

CublasExpertGemmArgs moeExpertGemmArgs(const void* x, bool xIsF32, const MoePermutation& perm, const void* const* table,
                                       int numExperts, int rows, int hidden, int inter, float* expertOut) {
  CublasExpertGemmArgs a;
  a.x = x;
  a.xIsF32 = xIsF32;
  a.sortedSourceRow = perm.sortedSourceRow;
  a.expertOffsets = perm.expertOffsets;
  a.activeExperts = perm.activeExperts;
  a.weights.table = table;
  a.numExperts = numExperts;
  a.rows = rows;
  a.hidden = hidden;
  a.inter = inter;
  a.out = expertOut;
  a.outIsF32 = true;
  return a;
}

bool useCublasExpertGemm(ExpertGemmChoice choice, int tokens, int minTokens, int hidden, int inter, bool bf16Weights,
                         const CublasHandle* cublas, cudaStream_t stream) {
  if (choice == ExpertGemmChoice::Ours) return false;
  if (choice == ExpertGemmChoice::Auto && tokens < minTokens) return false;  // decode-sized: ours, no checks
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  AFD_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  std::string why;
  if (cublas == nullptr) {
    why = "cuBLAS did not load";
  } else if (!cublasInfo().groupedBatchedEx) {
    why = "this cuBLAS (" + cublasInfo().version + ") lacks cublasGemmGroupedBatchedEx (cuBLAS >= 12.5)";
  } else if (!bf16Weights) {
    why = "the expert weights are not bf16";
  } else if (hidden % 8 != 0 || inter % 8 != 0) {
    why = "hidden " + std::to_string(hidden) + " / intermediate " + std::to_string(inter) + " are not multiples of 8";
  } else if (capture != cudaStreamCaptureStatusNone) {
    why = "the stream is being captured into a CUDA graph (grouped GEMM needs host row counts)";
  }
  if (choice == ExpertGemmChoice::Cublas) {
    if (!why.empty()) throw std::runtime_error("expertGemm \"cublas\" cannot be used: " + why + "; use ours or auto");
    return true;
  }
  return why.empty();
}

}  // namespace afd::cuda
