#include "cuda/cuda-backend.h"

#include <cstring>
#include <vector>

#include "cpu/check.h"
#include "cpu/op-contracts.h"
#include "cuda/attention.cuh"
#include "cuda/cublas-api.h"
#include "cuda/cuda-check.h"
#include "cuda/expert-gemm-cublas.h"
#include "cuda/gemm.cuh"
#include "cuda/moe.cuh"
#include "cuda/norm.cuh"
#include "cuda/rope.cuh"
#include "cuda/sampling.cuh"
#include "cuda/step-graph.h"

namespace afd::cuda {

using cpu::checkDType;
using cpu::checkFloat;
using cpu::checkShape;

namespace {

constexpr size_t kCublasWorkspaceBytes = 32u << 20;

int code(DType t) { return static_cast<int>(t); }

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

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

CudaBackend::CudaBackend(int deviceIndex) : deviceIndex_(deviceIndex) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || deviceIndex < 0 || deviceIndex >= count) {
    cudaGetLastError();
    throw Error("CUDA device " + std::to_string(deviceIndex) + " is not available (" +
                (status != cudaSuccess ? std::string(cudaGetErrorString(status)) : std::to_string(count) + " visible") +
                "); pick --device below the device count or use --backend cpu");
  }
  AFD_CUDA_CHECK(cudaSetDevice(deviceIndex));
  AFD_CUDA_CHECK(cudaDeviceGetAttribute(&multiProcessors_, cudaDevAttrMultiProcessorCount, deviceIndex));
  AFD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  expertGemmChoice_ = static_cast<int>(expertGemmChoiceFromEnv());
  expertGemmMinTokens_ = cublasExpertGemmMinTokens();
  try {
    cublasWorkspace_ = DeviceBuffer("cuBLAS workspace", kCublasWorkspaceBytes);
    cublas_ = std::make_unique<CublasHandle>(stream_, cublasWorkspace_.data(), cublasWorkspace_.bytes());
  } catch (const std::exception& e) {
    cublasError_ = e.what();  // our kernels cover every GEMM; cuBLAS only speeds up large ones
  }
}

CudaBackend::~CudaBackend() {
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cublas_.reset();
    cudaStreamDestroy(stream_);
  }
}

void CudaBackend::refuseWhileCapturing(const char* what) const {
  AFD_CHECK(!capturing_, "CUDA graph capture: " << what << " inside the captured decode step (a buffer had to grow or a host "
                                                       "transfer ran); this is a bug: the warm-up step of the same graph key "
                                                       "should have grown it. Set cudaGraph.policy \"off\" to run eagerly");
}

uint64_t CudaBackend::freeMemoryBytes() const {
  size_t freeBytes = 0, totalBytes = 0;
  AFD_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  return freeBytes;
}

uint64_t CudaBackend::allocationEpoch() const { return epoch_; }

void CudaBackend::beginCapture() {
  refuseWhileCapturing("a nested beginCapture");
  beginStreamCapture(stream_);
  capturing_ = true;
}

std::unique_ptr<CapturedGraph> CudaBackend::endCapture() {
  AFD_CHECK(capturing_, "CUDA graph capture: endCapture without beginCapture");
  capturing_ = false;
  return endStreamCapture(stream_, "the decode step", "set cudaGraph.policy \"off\" to run eagerly");
}

void CudaBackend::abortCapture() noexcept {
  capturing_ = false;
  abandonStreamCapture(stream_);
}

void* CudaBackend::allocate(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  refuseWhileCapturing("a device allocation");
  ++epoch_;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    size_t freeBytes = 0, totalBytes = 0;
    cudaMemGetInfo(&freeBytes, &totalBytes);
    throw Error("out of GPU memory on device " + std::to_string(deviceIndex_) + ": asked for " +
                std::to_string(bytes >> 20) + " MiB with " + std::to_string(freeBytes >> 20) + " MiB of " +
                std::to_string(totalBytes >> 20) + " MiB free; lower the KV cache size or batch, or use a larger GPU");
  }
  return p;
}

void CudaBackend::release(void* ptr) {
  if (ptr == nullptr) return;
  ++epoch_;
  if (capturing_) abortCapture();  // release runs in destructors (no throw): end the capture, free normally
  cudaStreamSynchronize(stream_);
  cudaFree(ptr);
}

void CudaBackend::copyToDevice(void* dst, const void* src, size_t bytes) {
  refuseWhileCapturing("a host-to-device copy");
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host buffer may be reused at once
}
void CudaBackend::copyToHost(void* dst, const void* src, size_t bytes) {
  refuseWhileCapturing("a device-to-host copy");
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}
void CudaBackend::copyDevice(void* dst, const void* src, size_t bytes) {
  AFD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}
void CudaBackend::fillZero(void* dst, size_t bytes) { AFD_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_)); }
void CudaBackend::synchronize() {
  refuseWhileCapturing("a stream synchronize");
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* CudaBackend::scratch(size_t bytes) {
  if (bytes > scratch_.bytes()) {
    refuseWhileCapturing("growing the backend scratch");
    ++epoch_;
    synchronize();
    scratch_ = DeviceBuffer();
    scratch_ = DeviceBuffer("CUDA backend scratch", align256(bytes + bytes / 2));
  }
  return scratch_.data();
}

void CudaBackend::embedding(const Tensor& ids, const Tensor& table, Tensor& out) {
  const int64_t T = ids.dim(0), H = table.dim(1);
  cpu::checkEmbedding(ids, table, out);
  embeddingLookup(ids.ptr<int32_t>(), table.data, code(table.dtype), out.ptr<float>(), static_cast<int>(T),
                  static_cast<int>(H), static_cast<int>(table.dim(0)), stream_);
}

void CudaBackend::rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1);
  cpu::checkRmsNorm(x, weight, out);
  cuda::addRmsNorm(x.ptr<float>(), nullptr, weight.data, code(weight.dtype), out.data, false, static_cast<int>(T),
                   static_cast<int>(H), eps, stream_);
}

void CudaBackend::addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = residual.dim(0), H = residual.dim(1);
  cpu::checkAddRmsNorm(delta, residual, weight, out);
  cuda::addRmsNorm(residual.ptr<float>(), delta.ptr<float>(), weight.data, code(weight.dtype), out.data, false,
                   static_cast<int>(T), static_cast<int>(H), eps, stream_);
}

void CudaBackend::qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm,
                             float eps, const RopeParams& rope) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = k.dim(1);
  cpu::checkQkNormRope(q, k, positions, qNorm, kNorm, rope);
  AFD_CHECK(!qNorm || !kNorm || qNorm->dtype == kNorm->dtype, "qkNormRope: q and k norms must share a dtype");
  QkNormRopeArgs a;
  a.qIn = q.ptr<float>();
  a.kIn = k.ptr<float>();
  a.qRowStride = nH * D;
  a.kRowStride = nKv * D;
  a.qOut = q.ptr<float>();
  a.kOut = k.ptr<float>();
  a.qNorm = qNorm ? qNorm->data : nullptr;
  a.kNorm = kNorm ? kNorm->data : nullptr;
  a.normDtype = qNorm ? code(qNorm->dtype) : (kNorm ? code(kNorm->dtype) : 2);
  a.invFreq = rope.invFreq.ptr<float>();
  a.attentionScale = rope.attentionScale;
  a.positions = positions.ptr<int32_t>();
  a.rows = static_cast<int>(T);
  a.numHeads = static_cast<int>(nH);
  a.numKvHeads = static_cast<int>(nKv);
  a.headDim = static_cast<int>(D);
  a.eps = eps;
  cuda::qkNormRope(a, stream_);
}

void CudaBackend::writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache,
                               Tensor& vCache) {
  const int64_t T = k.dim(0), nKv = k.dim(1), D = k.dim(2);
  cpu::checkWriteKvCache(k, v, slotMapping, kCache, vCache);
  checkFloat("writeKvCache", "kCache", kCache);
  AFD_CHECK(kCache.dtype == vCache.dtype, "writeKvCache: k and v caches must share a dtype");
  cuda::writeKvCache(k.ptr<float>(), v.ptr<float>(), slotMapping.ptr<int32_t>(), kCache.data, vCache.data,
                     code(kCache.dtype), static_cast<int>(T), static_cast<int>(nKv), static_cast<int>(D), stream_);
}

void CudaBackend::pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache,
                                 const AttentionBatch& batch, float scale, Tensor& out) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2);
  const int64_t B = kCache.dim(1), nKv = kCache.dim(2);
  cpu::checkPagedAttention(q, kCache, vCache, batch, out);
  AFD_CHECK(kCache.dtype == vCache.dtype, "pagedAttention: k and v caches must share a dtype");
  if (T == 0) return;
  PagedAttentionArgs a;
  a.q = q.ptr<float>();
  a.kCache = kCache.data;
  a.vCache = vCache.data;
  a.cacheDtype = code(kCache.dtype);
  a.blockTables = batch.blockTables.ptr<int32_t>();
  a.querySeq = batch.tokenSeq.ptr<int32_t>();
  a.positions = batch.positions.ptr<int32_t>();
  a.out = out.ptr<float>();
  a.numQueries = static_cast<int>(T);
  a.numHeads = static_cast<int>(nH);
  a.numKvHeads = static_cast<int>(nKv);
  a.headDim = static_cast<int>(D);
  a.blockSize = static_cast<int>(B);
  a.maxBlocksPerSeq = batch.maxBlocksPerSeq;
  a.numSplits = batch.maxContextLen > 256 || batch.maxContextLen == 0 ? attentionSplits(a.numQueries, a.numKvHeads, multiProcessors_) : 1;
  a.scale = scale;
  a.maxQueryLen = batch.maxQueryLen;  // > 1: tiled tensor-core prefill where the shape fits (attention.cuh)
  a.numSeqs = batch.numSeqs;
  const size_t counters = sizeof(int32_t) * static_cast<size_t>(T * nKv);
  if (a.numSplits > 1 && splitCounters_.bytes() < counters) {
    refuseWhileCapturing("growing the attention split counters");
    ++epoch_;
    synchronize();
    splitCounters_ = DeviceBuffer();
    splitCounters_ = DeviceBuffer("attention split counters", counters);
    AFD_CUDA_CHECK(cudaMemsetAsync(splitCounters_.data(), 0, counters, stream_));
  }
  a.splitCounters = splitCounters_.as<int32_t>();
  // Split partials only exist with numSplits > 1 (a long prefill would otherwise size the
  // scratch for [T, nH, D + 2] floats it never touches).
  if (a.numSplits > 1)
    a.workspace = static_cast<float*>(scratch(attentionWorkspaceBytes(a.numQueries, a.numHeads, a.headDim, a.numSplits)));
  cuda::pagedAttention(a, stream_);
}

void CudaBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  const int64_t T = x.dim(0), K = x.dim(1), N = w.dim(0);
  cpu::checkMatmul(x, w, bias, out);
  if (T == 0) return;
  LinearArgs a;
  a.x = x.data;
  a.xIsF32 = true;
  a.w = w.data;
  a.wDtype = code(w.dtype);
  a.rows = static_cast<int>(T);
  a.n = static_cast<int>(N);
  a.k = static_cast<int>(K);
  a.out = out.data;
  a.ldOut = static_cast<int>(N);
  a.epilogue = Epilogue::StoreF32;
  if (T > kSmallRowsMax && cublas_ && w.dtype == DType::BF16) {
    // cuBLAS takes bf16 activations: x = hi + lo, two GEMMs accumulate (near-f32 accuracy).
    char* parts = static_cast<char*>(scratch(static_cast<size_t>(T * K) * 4));
    void* hi = parts;
    void* lo = parts + static_cast<size_t>(T * K) * 2;
    splitF32ToBf16(x.ptr<float>(), hi, lo, T * K, stream_);
    cublas_->linear(hi, w.data, out.data, CUDA_R_32F, static_cast<int>(T), static_cast<int>(N), static_cast<int>(K),
                    static_cast<int>(N), 1.0f, 0.0f);
    cublas_->linear(lo, w.data, out.data, CUDA_R_32F, static_cast<int>(T), static_cast<int>(N), static_cast<int>(K),
                    static_cast<int>(N), 1.0f, 1.0f);
  } else {
    linear(a, 1, nullptr, stream_);
  }
  if (bias) addBiasRows(out.ptr<float>(), bias->data, code(bias->dtype), static_cast<int>(T), static_cast<int>(N), stream_);
}

void CudaBackend::siluGatedMlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1), I = gate.dim(0);
  cpu::checkSiluGatedMlp(x, gate, up, down, out);
  AFD_CHECK(gate.dtype == up.dtype && gate.dtype == down.dtype, "siluGatedMlp: gate, up and down must share a dtype");
  if (T == 0) return;
  void* act = scratch(static_cast<size_t>(T * I) * 4);  // f32: the engine path keeps f32 activations
  LinearArgs a;
  a.x = x.data;
  a.xIsF32 = true;
  a.w = gate.data;
  a.wUp = up.data;
  a.wDtype = code(gate.dtype);
  a.rows = static_cast<int>(T);
  a.n = static_cast<int>(I);
  a.k = static_cast<int>(H);
  a.out = act;
  a.ldOut = static_cast<int>(I);
  a.epilogue = Epilogue::SiluMulF32;
  gatedMlp(a, DownWeights{down.data, nullptr, code(down.dtype)}, out.data, 1, nullptr, stream_);
}

void CudaBackend::routerTopK(const Tensor& logits, int k, bool normTopk, Tensor& expertIds, Tensor& expertWeights) {
  const int64_t T = logits.dim(0), E = logits.dim(1);
  cpu::checkRouterTopK(logits, k, expertIds, expertWeights);
  moeTopK(logits.ptr<float>(), static_cast<int>(T), static_cast<int>(E), k, normTopk, expertIds.ptr<int32_t>(),
          expertWeights.ptr<float>(), stream_);
}

const void* const* CudaBackend::expertTables(const std::vector<ExpertWeights>& experts) {
  auto it = expertTables_.find(experts.data());
  if (it != expertTables_.end() && it->second.bytes() == 3 * experts.size() * sizeof(void*)) {
    return it->second.as<const void* const>();
  }
  refuseWhileCapturing("building an MoE expert pointer table");
  ++epoch_;
  std::vector<const void*> table(3 * experts.size(), nullptr);
  for (size_t e = 0; e < experts.size(); ++e) {
    table[e] = experts[e].gate.data;
    table[experts.size() + e] = experts[e].up.data;
    table[2 * experts.size() + e] = experts[e].down.data;
  }
  DeviceBuffer buffer("MoE expert pointer table", table.size() * sizeof(void*));
  AFD_CUDA_CHECK(cudaMemcpyAsync(buffer.data(), table.data(), buffer.bytes(), cudaMemcpyHostToDevice, stream_));
  synchronize();
  auto& slot = expertTables_[experts.data()];
  slot = std::move(buffer);
  return slot.as<const void* const>();
}

void CudaBackend::runExpertGemms(const Tensor& x, const MoePermutation& perm, const void* const* tables, int E, int rows,
                                 int H, int I, int gateDtype, int downDtype, int slots, void* act, float* expertOut) {
  LinearArgs a;
  a.x = x.data;
  a.xIsF32 = true;
  a.xRowIndex = perm.sortedSourceRow;
  a.wTable = tables;
  a.wUpTable = tables + E;
  a.wDtype = gateDtype;
  a.groupOffsets = perm.expertOffsets;
  a.activeGroups = perm.activeExperts;
  a.rows = rows;
  a.n = I;
  a.k = H;
  a.out = act;
  a.ldOut = I;
  a.epilogue = Epilogue::SiluMulF32;
  gatedMlp(a, DownWeights{nullptr, tables + 2 * E, downDtype}, expertOut, slots, nullptr, stream_);
}

void CudaBackend::moeExperts(const Tensor& x, const Tensor& expertIds, const Tensor& expertWeights,
                             const std::vector<ExpertWeights>& experts, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1), K = expertIds.dim(1);
  const int E = static_cast<int>(experts.size());
  cpu::checkMoeExperts(x, expertIds, expertWeights, out);
  if (T == 0) return;
  const ExpertWeights* any = nullptr;
  for (const ExpertWeights& ew : experts)
    if (!ew.gate.empty()) any = &ew;
  AFD_CHECK(any != nullptr, "moeExperts: no expert weights are loaded");
  const int64_t I = any->gate.dim(0);
  const int rows = static_cast<int>(T * K);
  const int slots = moeGridSlots(static_cast<int>(T), E, static_cast<int>(K));
  const void* const* tables = expertTables(experts);
  const size_t bytes = align256(sizeof(int32_t) * (E + 1)) + align256(sizeof(int32_t) * slots) +
                       2 * align256(sizeof(int32_t) * rows) + align256(4ull * rows * I) + align256(4ull * rows * H);
  Carver carve(scratch(bytes));
  MoePermutation perm;
  perm.expertOffsets = carve.take<int32_t>(E + 1);
  perm.activeExperts = carve.take<int32_t>(slots);
  perm.sortedSourceRow = carve.take<int32_t>(rows);
  perm.pairPosition = carve.take<int32_t>(rows);
  void* act = carve.take<float>(static_cast<size_t>(rows) * I);
  float* expertOut = carve.take<float>(static_cast<size_t>(rows) * H);
  moePermute(expertIds.ptr<int32_t>(), static_cast<int>(T), E, static_cast<int>(K), slots, perm, stream_);
  const auto choice = static_cast<ExpertGemmChoice>(expertGemmChoice_);
  // Grouped GEMM needs the per-expert counts on the host, so a captured step keeps our kernel.
  if (!capturing_ && useCublasExpertGemm(choice, static_cast<int>(T), expertGemmMinTokens_, static_cast<int>(H),
                                         static_cast<int>(I), any->gate.dtype == DType::BF16, cublas_.get(), stream_)) {
    if (!cublasExperts_) cublasExperts_ = std::make_unique<CublasExpertGemm>(*cublas_);
    cublasExperts_->run(moeExpertGemmArgs(x.ptr<float>(), perm, tables, E, rows, static_cast<int>(H), static_cast<int>(I),
                                          expertOut),
                        stream_);
  } else {
    runExpertGemms(x, perm, tables, E, rows, static_cast<int>(H), static_cast<int>(I), code(any->gate.dtype),
                   code(any->down.dtype), slots, act, expertOut);
  }
  MoeCombineArgs c;
  c.expertOut = expertOut;
  c.pairPosition = perm.pairPosition;
  c.topkWeights = expertWeights.ptr<float>();
  c.out = out.ptr<float>();
  c.rows = static_cast<int>(T);
  c.hidden = static_cast<int>(H);
  c.topK = static_cast<int>(K);
  moeCombine(c, stream_);
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& out) {
  AFD_CHECK(a.numel() == b.numel() && a.numel() == out.numel(),
            "add: shapes " << a.shapeString() << " + " << b.shapeString() << " -> " << out.shapeString() << " differ");
  addF32(a.ptr<float>(), b.ptr<float>(), out.ptr<float>(), a.numel(), stream_);
}

void CudaBackend::gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) {
  cpu::checkGatherRows(x, rows, out);
  gatherRowsF32(x.ptr<float>(), rows.ptr<int32_t>(), out.ptr<float>(), static_cast<int>(rows.dim(0)),
                static_cast<int>(x.dim(1)), stream_);
}

void CudaBackend::sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) {
  checkShape("sample", "logits", logits, {-1, -1});
  const int S = static_cast<int>(logits.dim(0));
  if (S == 0) return;
  // One upload of the per-row settings: [temperature | topK | topP | seed | position | tokens].
  const size_t rowBytes = 4;
  std::vector<uint8_t> host(6 * rowBytes * S);
  std::memcpy(host.data(), params.temperature, rowBytes * S);
  std::memcpy(host.data() + 1 * rowBytes * S, params.topK, rowBytes * S);
  std::memcpy(host.data() + 2 * rowBytes * S, params.topP, rowBytes * S);
  std::memcpy(host.data() + 3 * rowBytes * S, params.seeds, rowBytes * S);
  std::memcpy(host.data() + 4 * rowBytes * S, params.positions, rowBytes * S);
  uint8_t* dev = static_cast<uint8_t*>(scratch(host.size()));
  AFD_CUDA_CHECK(cudaMemcpyAsync(dev, host.data(), 5 * rowBytes * S, cudaMemcpyHostToDevice, stream_));
  SamplingArgs a;
  a.logits = logits.ptr<float>();
  a.temperature = reinterpret_cast<const float*>(dev);
  a.topK = reinterpret_cast<const int32_t*>(dev + rowBytes * S);
  a.topP = reinterpret_cast<const float*>(dev + 2 * rowBytes * S);
  a.seed = reinterpret_cast<const uint32_t*>(dev + 3 * rowBytes * S);
  a.position = reinterpret_cast<const int32_t*>(dev + 4 * rowBytes * S);
  a.tokens = reinterpret_cast<int32_t*>(dev + 5 * rowBytes * S);
  a.rows = S;
  a.vocab = static_cast<int>(logits.dim(1));
  sampleTokens(a, stream_);
  copyToHost(outTokens, a.tokens, rowBytes * S);
}

}  // namespace afd::cuda

namespace afd {

std::unique_ptr<Backend> createCudaBackend(const BackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options.deviceIndex);
}

}  // namespace afd
