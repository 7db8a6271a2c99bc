#include "cuda/cuda-backend.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/op-checks.h"
#include "core/op-contracts.h"
#include "cuda/attention.cuh"
#include "cuda/cublas-api.h"
#include "cuda/cuda-check.h"
#include "cuda/elementwise.cuh"
#include "cuda/embedding.cuh"
#include "cuda/expert-gemm-cublas.h"
#include "cuda/gather-rows.cuh"
#include "cuda/gemm.cuh"
#include "cuda/host-helpers.h"
#include "cuda/moe.cuh"
#include "cuda/norm.cuh"
#include "cuda/rope.cuh"
#include "cuda/sampling.cuh"
#include "cuda/step-graph.h"

namespace afd::cuda {

using contract::checkDType;
using contract::checkFloat;
using contract::checkShape;

namespace {

constexpr size_t kCublasWorkspaceBytes = 32u << 20;

}  // namespace

CudaBackend::CudaBackend(int deviceIndex, const CudaOptions& options) : deviceIndex_(deviceIndex), options_(options) {
  validateCudaOptions(options_);
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
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, deviceIndex) != cudaSuccess) cudaGetLastError();
  streamOrdered_ = pools != 0;
  routerCounter_ = DeviceBuffer("router done counter", 256);
  AFD_CUDA_CHECK(cudaMemsetAsync(routerCounter_.data(), 0, routerCounter_.bytes(), stream_));
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
    stream_ = nullptr;  // buffers released after this free synchronously
  }
}

void CudaBackend::refuseWhileCapturing(const char* what) const {
  AFD_CHECK(!capturing_, "CUDA graph capture: " << what << " inside the captured decode step (a buffer had to grow or a host "
                                                       "transfer ran); this is a bug: the warm-up step of the same graph key "
                                                       "should have grown it. Set cudaGraph.policy \"off\" to run eagerly");
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
  contract::checkEmbedding(ids, table, out);
  embeddingLookup(ids.ptr<int32_t>(), table.data, code(table.dtype), out.ptr<float>(), static_cast<int>(T),
                  static_cast<int>(H), static_cast<int>(table.dim(0)), stream_);
}

void CudaBackend::fillRandom(Tensor& t, uint64_t key, float scale, float offset) {
  contract::checkFloat("fillRandom", "tensor", t);
  fillDummy(t.data, code(t.dtype), static_cast<size_t>(t.numel()), key, scale, offset, stream_);
}

void CudaBackend::rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = x.dim(0), H = x.dim(1);
  contract::checkRmsNorm(x, weight, out);
  // With no delta the kernel only reads the residual argument.
  cuda::addRmsNorm(const_cast<float*>(x.ptr<float>()), nullptr, false, weight.data, code(weight.dtype), out.data,
                   out.dtype == DType::BF16, static_cast<int>(T), static_cast<int>(H), eps, stream_);
}

void CudaBackend::addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out) {
  const int64_t T = residual.dim(0), H = residual.dim(1);
  contract::checkAddRmsNorm(delta, residual, weight, out);
  cuda::addRmsNorm(residual.ptr<float>(), delta.data, delta.dtype == DType::BF16, weight.data, code(weight.dtype), out.data,
                   out.dtype == DType::BF16, static_cast<int>(T), static_cast<int>(H), eps, stream_);
}

namespace {

QkNormRopeArgs ropeArgs(const Tensor* qNorm, const Tensor* kNorm, float eps, const RopeParams& rope, const Tensor& positions,
                        int64_t T, int64_t nH, int64_t nKv, int64_t D) {
  AFD_CHECK(!qNorm || !kNorm || qNorm->dtype == kNorm->dtype, "qkNormRope: q and k norms must share a dtype");
  QkNormRopeArgs a;
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
  return a;
}

}  // namespace

void CudaBackend::qkNormRope(Tensor& q, Tensor& k, const Tensor& positions, const Tensor* qNorm, const Tensor* kNorm,
                             float eps, const RopeParams& rope) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = k.dim(1);
  contract::checkQkNormRope(q, k, positions, qNorm, kNorm, rope);
  QkNormRopeArgs a = ropeArgs(qNorm, kNorm, eps, rope, positions, T, nH, nKv, D);
  a.qIn = q.ptr<float>();
  a.kIn = k.ptr<float>();
  a.qRowStride = nH * D;
  a.kRowStride = nKv * D;
  a.qOut = q.ptr<float>();
  a.kOut = k.ptr<float>();
  cuda::qkNormRope(a, stream_);
}

void CudaBackend::qkNormRopeCache(const Tensor& qkv, const Tensor& positions, const Tensor& slotMapping,
                                  const Tensor* qNorm, const Tensor* kNorm, float eps, const RopeParams& rope, Tensor& q,
                                  Tensor& kCache, Tensor& vCache) {
  contract::checkQkNormRopeCache(qkv, positions, slotMapping, qNorm, kNorm, rope, q, kCache, vCache);
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2), nKv = kCache.dim(2), row = (nH + 2 * nKv) * D;
  QkNormRopeArgs a = ropeArgs(qNorm, kNorm, eps, rope, positions, T, nH, nKv, D);
  a.qIn = qkv.ptr<float>();
  a.kIn = a.qIn + nH * D;
  a.vIn = a.kIn + nKv * D;
  a.qRowStride = a.kRowStride = a.vRowStride = row;
  a.qOut = q.ptr<float>();
  a.slotMapping = slotMapping.ptr<int32_t>();
  a.kCache = kCache.data;
  a.vCache = vCache.data;
  a.cacheDtype = code(kCache.dtype);
  cuda::qkNormRope(a, stream_);
}

void CudaBackend::writeKvCache(const Tensor& k, const Tensor& v, const Tensor& slotMapping, Tensor& kCache,
                               Tensor& vCache) {
  const int64_t T = k.dim(0), nKv = k.dim(1), D = k.dim(2);
  contract::checkWriteKvCache(k, v, slotMapping, kCache, vCache);
  contract::checkFloat("writeKvCache", "kCache", kCache);
  AFD_CHECK(kCache.dtype == vCache.dtype, "writeKvCache: k and v caches must share a dtype");
  cuda::writeKvCache(k.ptr<float>(), v.ptr<float>(), slotMapping.ptr<int32_t>(), kCache.data, vCache.data,
                     code(kCache.dtype), static_cast<int>(T), static_cast<int>(nKv), static_cast<int>(D), stream_);
}

void CudaBackend::pagedAttention(const Tensor& q, const Tensor& kCache, const Tensor& vCache,
                                 const AttentionBatch& batch, float scale, Tensor& out) {
  const int64_t T = q.dim(0), nH = q.dim(1), D = q.dim(2);
  const int64_t B = kCache.dim(1), nKv = kCache.dim(2);
  contract::checkPagedAttention(q, kCache, vCache, batch, out);
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
  const int shape = static_cast<int>(shapeRows(T));
  a.numSplits = batch.maxContextLen > 256 || batch.maxContextLen == 0 ? attentionSplits(shape, a.numKvHeads, multiProcessors_, options_.attentionBlocksPerSm) : 1;
  a.scale = scale;
  a.maxQueryLen = batch.maxQueryLen;  // > 1: tiled tensor-core prefill where the shape fits (attention.cuh)
  a.numSeqs = batch.numSeqs;
  // The family for the options' preference; a DBO stage runs the one the whole step would
  // (picked by query count).
  PagedAttentionArgs whole = a;
  whole.numQueries = shape;
  a.kernel = resolveAttentionKernel(whole, options_.attentionKernel);
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

void CudaBackend::linearInto(const Tensor& x, const Tensor& w, Tensor& out, bool accumulate) {
  const int64_t T = x.dim(0), K = x.dim(1), N = w.dim(0);
  LinearArgs a;
  a.x = x.data;
  a.xIsF32 = x.dtype == DType::F32;
  a.w = w.data;
  a.wDtype = code(w.dtype);
  a.rows = static_cast<int>(T);
  a.n = static_cast<int>(N);
  a.k = static_cast<int>(K);
  a.out = out.data;
  a.ldOut = static_cast<int>(N);
  a.epilogue = accumulate ? Epilogue::AccumulateF32 : Epilogue::StoreF32;
  a.shapeRows = static_cast<int>(shapeRows(T));
  const bool many = shapeRows(T) > kSmallRowsMax && cublas_ && w.dtype == DType::BF16;
  if (many && a.xIsF32 && accumulate) {
    // A projection into the residual (o_proj): its input rounded to bf16 like every
    // activation, one cuBLAS GEMM with beta = 1.
    void* xb = scratch(static_cast<size_t>(T * K) * 2);
    convertF32ToBf16(x.ptr<float>(), xb, T * K, stream_);
    a.x = xb;
    a.xIsF32 = false;
    linear(a, 1, cublas_.get(), stream_);
  } else if (many && a.xIsF32) {
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
    linear(a, 1, many ? cublas_.get() : nullptr, stream_);
  }
}

void CudaBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  contract::checkMatmul(x, w, bias, out);
  if (x.dim(0) == 0) return;
  linearInto(x, w, out, false);
  if (bias) addBiasRows(out.ptr<float>(), bias->data, code(bias->dtype), static_cast<int>(x.dim(0)), static_cast<int>(w.dim(0)), stream_);
}

void CudaBackend::matmulAdd(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  contract::checkMatmul(x, w, bias, out);
  if (x.dim(0) == 0) return;
  linearInto(x, w, out, true);
  if (bias) addBiasRows(out.ptr<float>(), bias->data, code(bias->dtype), static_cast<int>(x.dim(0)), static_cast<int>(w.dim(0)), stream_);
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& out) {
  contract::checkAdd(a, b, out);
  if (a.dtype == DType::BF16) addBf16(a.data, b.data, out.data, a.numel(), stream_);  // DeepSeek's shared experts
  else addF32(a.ptr<float>(), b.ptr<float>(), out.ptr<float>(), a.numel(), stream_);
}

void CudaBackend::gatherRows(const Tensor& x, const Tensor& rows, Tensor& out) {
  contract::checkGatherRows(x, rows, out);
  cuda::gatherRows(x.data, rows.ptr<int32_t>(), out.data, static_cast<int>(rows.dim(0)), static_cast<int>(x.dim(1)),
                   static_cast<int>(dtypeBytes(x.dtype)), stream_);
}

void CudaBackend::sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) {
  contract::checkShape("sample", "logits", logits, {-1, -1});
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
