#include "cuda/moe-decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cuda/attention.cuh"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/gemm.cuh"
#include "cuda/moe.cuh"
#include "cuda/norm.cuh"
#include "cuda/random-fill.cuh"
#include "cuda/rope.cuh"
#include "cuda/sampling.cuh"
#include "model/rope-table.h"

namespace afd::cuda {
namespace {

constexpr int kBf16 = 2;
const int kBuckets[] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512};

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

// Device pointers of one layer's weights (bf16, inside the arena).
struct MoeDecoder::Layer {
  void* inputNorm;  // [H]
  void* qkv;        // [(nH + 2 nKv) D, H]: q rows, then k rows, then v rows
  void* qNorm;      // [D]
  void* kNorm;      // [D]
  void* o;          // [H, nH D]
  void* postNorm;   // [H]
  void* router;     // [E, H]
  void* gate;       // [E, I, H]
  void* up;         // [E, I, H]
  void* down;       // [E, H, I]
};

// Activation and input buffers for maxBatch rows (carved from one allocation).
struct MoeDecoder::Buffers {
  void* embed = nullptr;
  void* finalNorm = nullptr;
  void* lmHead = nullptr;
  float* invFreq = nullptr;
  // inputs (one contiguous block, uploaded with one copy)
  uint8_t* inputs = nullptr;
  size_t inputBytes = 0;
  int32_t* tokenIds = nullptr;
  int32_t* positions = nullptr;
  int32_t* slots = nullptr;
  float* temperature = nullptr;
  int32_t* topK = nullptr;
  float* topP = nullptr;
  uint32_t* seeds = nullptr;
  int32_t* blockTables = nullptr;
  // activations
  float* residual = nullptr;
  void* xNorm = nullptr;  // bf16 [B, H]
  float* qkv = nullptr;
  float* q = nullptr;
  float* attnOut = nullptr;
  void* attnOutBf16 = nullptr;
  float* routerLogits = nullptr;
  int32_t* topkIds = nullptr;
  float* topkWeights = nullptr;
  MoePermutation perm;
  int32_t* activeCounts = nullptr;  // [layers]
  void* act = nullptr;              // bf16 [B K, I]
  float* expertOut = nullptr;       // [B K, H]
  float* logits = nullptr;          // [B, V]
  int32_t* tokens = nullptr;        // [B]
  float* attentionWorkspace = nullptr;
  std::vector<uint8_t> hostInputs;
};

MoeDecoder::MoeDecoder(CudaBackend& backend, const ModelConfig& config, const DecoderOptions& options)
    : backend_(backend), config_(config), options_(options), stream_(backend.stream()) {
  if (config.numExperts <= 0 || config.numExpertsPerTok <= 0) {
    throw std::invalid_argument("MoeDecoder: the fused decode path is for MoE models (numExperts > 0); got arch " +
                                config.arch);
  }
  for (bool moe : config.moeLayers)
    if (!moe) throw std::invalid_argument("MoeDecoder: every layer must be MoE (dense layers run on the engine path)");
  if (options.maxBatch <= 0 || options.maxContext <= 0 || options.blockSize <= 0) {
    throw std::invalid_argument("MoeDecoder: maxBatch, maxContext and blockSize must be positive");
  }
  allocate();
}

MoeDecoder::~MoeDecoder() {
  cudaStreamSynchronize(stream_);
}

void MoeDecoder::allocate() {
  const ModelConfig& c = config_;
  const size_t H = c.hiddenSize, V = c.vocabSize, D = c.headDim, nH = c.numHeads, nKv = c.numKvHeads;
  const size_t E = c.numExperts, I = c.moeIntermediateSize, K = c.numExpertsPerTok, L = c.numLayers;
  const size_t qkvRows = (nH + 2 * nKv) * D;
  // ---- weights arena
  size_t cursor = 0;
  auto place = [&](const std::string& name, size_t elements) {
    named_[name] = WeightRef{reinterpret_cast<void*>(cursor), elements};
    cursor += (elements + 127) / 128 * 128;
  };
  place("model.embed_tokens.weight", V * H);
  for (size_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    place(p + "input_layernorm.weight", H);
    place(p + "self_attn.qkv", qkvRows * H);
    place(p + "self_attn.q_norm.weight", D);
    place(p + "self_attn.k_norm.weight", D);
    place(p + "self_attn.o_proj.weight", H * nH * D);
    place(p + "post_attention_layernorm.weight", H);
    place(p + "mlp.gate.weight", E * H);
    place(p + "mlp.experts.gate", E * I * H);
    place(p + "mlp.experts.up", E * I * H);
    place(p + "mlp.experts.down", E * H * I);
  }
  place("model.norm.weight", H);
  if (!c.tieWordEmbeddings) place("lm_head.weight", V * H);
  weights_ = DeviceBuffer("model weights (bf16, " + std::to_string(L) + " layers)", cursor * 2);
  char* base = weights_.as<char>();
  for (auto& [name, ref] : named_) ref.data = base + reinterpret_cast<size_t>(ref.data) * 2;
  auto at = [&](const std::string& name) { return named_.at(name).data; };
  layers_.resize(L);
  for (size_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    layers_[l] = Layer{at(p + "input_layernorm.weight"), at(p + "self_attn.qkv"), at(p + "self_attn.q_norm.weight"),
                       at(p + "self_attn.k_norm.weight"), at(p + "self_attn.o_proj.weight"),
                       at(p + "post_attention_layernorm.weight"), at(p + "mlp.gate.weight"), at(p + "mlp.experts.gate"),
                       at(p + "mlp.experts.up"), at(p + "mlp.experts.down")};
    // q/k/v projections are row ranges of the fused qkv matrix.
    char* qkv = static_cast<char*>(layers_[l].qkv);
    named_[p + "self_attn.q_proj.weight"] = WeightRef{qkv, nH * D * H};
    named_[p + "self_attn.k_proj.weight"] = WeightRef{qkv + nH * D * H * 2, nKv * D * H};
    named_[p + "self_attn.v_proj.weight"] = WeightRef{qkv + (nH + nKv) * D * H * 2, nKv * D * H};
    for (size_t e = 0; e < E; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      named_[x + "gate_proj.weight"] = WeightRef{static_cast<char*>(layers_[l].gate) + e * I * H * 2, I * H};
      named_[x + "up_proj.weight"] = WeightRef{static_cast<char*>(layers_[l].up) + e * I * H * 2, I * H};
      named_[x + "down_proj.weight"] = WeightRef{static_cast<char*>(layers_[l].down) + e * H * I * 2, H * I};
    }
  }
  buf_ = std::make_unique<Buffers>();
  buf_->embed = at("model.embed_tokens.weight");
  buf_->finalNorm = at("model.norm.weight");
  buf_->lmHead = c.tieWordEmbeddings ? buf_->embed : at("lm_head.weight");

  // ---- KV pool: [numBlocks, blockSize, nKv, D] bf16 per layer, K and V
  maxBlocksPerSeq_ = (options_.maxContext + options_.blockSize - 1) / options_.blockSize;
  const size_t bytesPerBlock = 2 * L * options_.blockSize * nKv * D * 2;
  const size_t needed = static_cast<size_t>(options_.maxBatch) * maxBlocksPerSeq_;
  size_t freeBytes = 0, totalBytes = 0;
  deviceMemoryInfo(freeBytes, totalBytes);
  const size_t activationReserve = 4ull << 30;
  const size_t budget = freeBytes > activationReserve
                            ? static_cast<size_t>((freeBytes - activationReserve) * options_.kvMemoryFraction)
                            : 0;
  if (needed * bytesPerBlock > budget) {
    throw std::runtime_error("KV cache does not fit: " + std::to_string(options_.maxBatch) + " sequences x " +
                             std::to_string(options_.maxContext) + " positions need " +
                             std::to_string((needed * bytesPerBlock) >> 20) + " MiB but " +
                             std::to_string(options_.kvMemoryFraction) + " of free memory after weights is " +
                             std::to_string(budget >> 20) + " MiB; lower the batch or context, or raise the fraction");
  }
  numKvBlocks_ = static_cast<int>(needed);
  kv_ = DeviceBuffer("KV cache pool", needed * bytesPerBlock);

  // ---- activations and inputs
  const size_t B = options_.maxBatch;
  const int splits = attentionSplits(options_.maxBatch, static_cast<int>(nKv), backend_.multiProcessors());
  size_t attnWs = 0;
  for (int rows : kBuckets) {
    if (rows > options_.maxBatch) break;
    attnWs = std::max(attnWs, attentionWorkspaceBytes(rows, static_cast<int>(nH), static_cast<int>(D),
                                                      attentionSplits(rows, static_cast<int>(nKv), backend_.multiProcessors())));
  }
  attnWs = std::max(attnWs, attentionWorkspaceBytes(options_.maxBatch, static_cast<int>(nH), static_cast<int>(D), splits));
  const size_t inputBytes = align256(B * 4) * 7 + align256(B * maxBlocksPerSeq_ * 4);
  const size_t sizes[] = {inputBytes,
                          align256(B * H * 4),          // residual
                          align256(B * H * 2),          // xNorm
                          align256(B * qkvRows * 4),    // qkv
                          align256(B * nH * D * 4),     // q
                          align256(B * nH * D * 4),     // attnOut
                          align256(B * nH * D * 2),     // attnOutBf16
                          align256(B * E * 4),          // router logits
                          align256(B * K * 4) * 2,      // topk
                          align256((E + 1) * 4) + align256(E * 4) + align256(B * K * 4) * 2 + align256(L * 4),
                          align256(B * K * I * 2),      // act
                          align256(B * K * H * 4),      // expertOut
                          align256(B * V * 4),          // logits
                          align256(B * 4),              // tokens
                          align256(attnWs)};
  size_t total = 0;
  for (size_t s : sizes) total += s;
  activations_ = DeviceBuffer("decode activations (batch " + std::to_string(B) + ")", total);
  char* p = activations_.as<char>();
  auto take = [&](size_t bytes) {
    char* r = p;
    p += align256(bytes);
    return r;
  };
  Buffers& b = *buf_;
  b.inputs = reinterpret_cast<uint8_t*>(p);
  b.tokenIds = reinterpret_cast<int32_t*>(take(B * 4));
  b.positions = reinterpret_cast<int32_t*>(take(B * 4));
  b.slots = reinterpret_cast<int32_t*>(take(B * 4));
  b.temperature = reinterpret_cast<float*>(take(B * 4));
  b.topK = reinterpret_cast<int32_t*>(take(B * 4));
  b.topP = reinterpret_cast<float*>(take(B * 4));
  b.seeds = reinterpret_cast<uint32_t*>(take(B * 4));
  b.blockTables = reinterpret_cast<int32_t*>(take(B * maxBlocksPerSeq_ * 4));
  b.inputBytes = static_cast<size_t>(p - reinterpret_cast<char*>(b.inputs));
  b.residual = reinterpret_cast<float*>(take(B * H * 4));
  b.xNorm = take(B * H * 2);
  b.qkv = reinterpret_cast<float*>(take(B * qkvRows * 4));
  b.q = reinterpret_cast<float*>(take(B * nH * D * 4));
  b.attnOut = reinterpret_cast<float*>(take(B * nH * D * 4));
  b.attnOutBf16 = take(B * nH * D * 2);
  b.routerLogits = reinterpret_cast<float*>(take(B * E * 4));
  b.topkIds = reinterpret_cast<int32_t*>(take(B * K * 4));
  b.topkWeights = reinterpret_cast<float*>(take(B * K * 4));
  b.perm.expertOffsets = reinterpret_cast<int32_t*>(take((E + 1) * 4));
  b.perm.activeExperts = reinterpret_cast<int32_t*>(take(E * 4));
  b.perm.sortedSourceRow = reinterpret_cast<int32_t*>(take(B * K * 4));
  b.perm.pairPosition = reinterpret_cast<int32_t*>(take(B * K * 4));
  b.activeCounts = reinterpret_cast<int32_t*>(take(L * 4));
  b.act = take(B * K * I * 2);
  b.expertOut = reinterpret_cast<float*>(take(B * K * H * 4));
  b.logits = reinterpret_cast<float*>(take(B * V * 4));
  b.tokens = reinterpret_cast<int32_t*>(take(B * 4));
  b.attentionWorkspace = reinterpret_cast<float*>(take(attnWs));
  b.hostInputs.assign(b.inputBytes, 0);
  attentionWorkspaceBytes_ = attnWs;
  // Staging of split-stage cuBLAS GEMMs (stageExactGemm): qkv, o_proj and router shapes.
  const size_t maxK = std::max(H, nH * D), maxN = std::max({qkvRows, H, E});
  stageGemmXBytes_ = align256(B * maxK * 2);
  stageGemm_ = DeviceBuffer("split-stage GEMM staging", stageGemmXBytes_ + align256(B * maxN * 4));
  splitCounters_ = DeviceBuffer("attention split counters", B * nKv * 4);
  AFD_CUDA_CHECK(cudaMemsetAsync(splitCounters_.data(), 0, splitCounters_.bytes(), stream_));
  routerCounter_ = DeviceBuffer("router done counter", 256);
  AFD_CUDA_CHECK(cudaMemsetAsync(routerCounter_.data(), 0, routerCounter_.bytes(), stream_));
  AFD_CUDA_CHECK(cudaMemsetAsync(activations_.data(), 0, activations_.bytes(), stream_));

  invFreqHost_ = ropeInvFreq(c);
  DeviceBuffer invFreq("rope inverse frequencies", invFreqHost_.size() * 4);
  AFD_CUDA_CHECK(cudaMemcpyAsync(invFreq.data(), invFreqHost_.data(), invFreq.bytes(), cudaMemcpyHostToDevice, stream_));
  b.invFreq = invFreq.as<float>();
  named_["__invFreq"] = WeightRef{invFreq.data(), invFreqHost_.size()};
  invFreqBuffer_ = std::move(invFreq);
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void MoeDecoder::initSynthetic(uint64_t seed) {
  const float matrixScale = 0.02f * std::sqrt(3.0f);  // uniform with std 0.02 (HF initializer_range)
  fillRandom(weights_.data(), kBf16, weights_.bytes() / 2, seed, matrixScale, 0.0f, stream_);
  uint64_t salt = 1;
  for (auto& [name, ref] : named_) {
    if (name.find("norm") != std::string::npos) fillRandom(ref.data, kBf16, ref.elements, seed + (salt++), 0.1f, 1.0f, stream_);
  }
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void MoeDecoder::fillKvRandom(uint64_t seed) {
  fillRandom(kv_.data(), kBf16, kv_.bytes() / 2, seed, 1.0f, 0.0f, stream_);
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

MoeDecoder::WeightRef MoeDecoder::weight(const std::string& hfName) {
  auto it = named_.find(hfName);
  if (it == named_.end()) throw std::invalid_argument("MoeDecoder: no weight named " + hfName);
  return it->second;
}

int MoeDecoder::paddedBatch(int rows) const {
  for (int b : kBuckets)
    if (b >= rows && b <= options_.maxBatch) return b;
  return 0;
}

void MoeDecoder::upload(const DecodeInput& in, int paddedRows) {
  if (in.rows <= 0 || in.rows > paddedRows || paddedRows > options_.maxBatch) {
    throw std::invalid_argument("MoeDecoder: batch of " + std::to_string(in.rows) + " rows does not fit (max " +
                                std::to_string(options_.maxBatch) + ")");
  }
  const size_t B = options_.maxBatch;
  Buffers& b = *buf_;
  uint8_t* h = b.hostInputs.data();
  auto region = [&](void* dev) { return h + (static_cast<uint8_t*>(dev) - b.inputs); };
  auto put = [&](void* dev, const void* src, size_t elemBytes, size_t count, uint32_t padValue) {
    std::memcpy(region(dev), src, elemBytes * count);
    for (size_t i = count; i < static_cast<size_t>(paddedRows); ++i)
      std::memcpy(region(dev) + i * elemBytes, &padValue, elemBytes);
  };
  const float one = 1.0f;
  uint32_t oneBits;
  std::memcpy(&oneBits, &one, 4);
  put(b.tokenIds, in.tokenIds, 4, in.rows, 0);
  put(b.positions, in.positions, 4, in.rows, 0);
  put(b.slots, in.slotMapping, 4, in.rows, 0xffffffffu);  // padding rows write nothing
  put(b.temperature, in.temperature, 4, in.rows, 0);
  put(b.topK, in.topK, 4, in.rows, 0);
  put(b.topP, in.topP, 4, in.rows, oneBits);
  put(b.seeds, in.seeds, 4, in.rows, 0);
  uint8_t* tables = region(b.blockTables);
  std::memcpy(tables, in.blockTables, 4ull * in.rows * maxBlocksPerSeq_);
  std::memset(tables + 4ull * in.rows * maxBlocksPerSeq_, 0, 4ull * (paddedRows - in.rows) * maxBlocksPerSeq_);
  (void)B;
  AFD_CUDA_CHECK(cudaMemcpyAsync(b.inputs, h, b.inputBytes, cudaMemcpyHostToDevice, stream_));
}

void MoeDecoder::enqueueLayer(int l, int rows) {
  enqueueAttentionHalf(l, 0, rows);
  enqueueFfnHalf(l, buf_->xNorm, rows, buf_->residual, true, buf_->xNorm);
}

void* MoeDecoder::xNormRows(int rowBegin) const {
  return static_cast<char*>(buf_->xNorm) + static_cast<size_t>(rowBegin) * config_.hiddenSize * 2;
}
float* MoeDecoder::residualRows(int rowBegin) const {
  return buf_->residual + static_cast<size_t>(rowBegin) * config_.hiddenSize;
}
const void* MoeDecoder::nextNormWeight(int l) const {
  return l + 1 < config_.numLayers ? layers_[l + 1].inputNorm : buf_->finalNorm;
}

void MoeDecoder::enqueueAttentionHalf(int l, int rowBegin, int rows, int shapeRows) {
  shapeRows = checkShapeRows(rows, shapeRows);
  AFD_CHECK(rowBegin >= 0 && rowBegin + rows <= options_.maxBatch,
            "MoeDecoder: stage rows [" << rowBegin << ", " << rowBegin + rows << ") exceed maxBatch " << options_.maxBatch);
  const ModelConfig& c = config_;
  const int H = static_cast<int>(c.hiddenSize), D = static_cast<int>(c.headDim);
  const int nH = c.numHeads, nKv = c.numKvHeads;
  const int qkvRows = (nH + 2 * nKv) * D;
  const Layer& w = layers_[l];
  Buffers& b = *buf_;
  const CublasHandle* cublas = backend_.cublas();
  const float eps = static_cast<float>(c.rmsNormEps);
  // Stage rows: inputs and the residual stream are offset; scratch starts at row 0.
  void* xNorm = xNormRows(rowBegin);
  float* residual = residualRows(rowBegin);
  const int32_t* positions = b.positions + rowBegin;
  const int32_t* slots = b.slots + rowBegin;
  const int32_t* blockTables = b.blockTables + static_cast<size_t>(rowBegin) * maxBlocksPerSeq_;

  LinearArgs qkv;
  qkv.x = xNorm;
  qkv.w = w.qkv;
  qkv.rows = rows;
  qkv.n = qkvRows;
  qkv.k = H;
  qkv.out = b.qkv;
  qkv.ldOut = qkvRows;
  qkv.epilogue = Epilogue::StoreF32;
  denseLinear(qkv, shapeRows);

  const size_t layerKvElems = static_cast<size_t>(numKvBlocks_) * options_.blockSize * nKv * D;
  uint16_t* kCache = kv_.as<uint16_t>() + 2 * l * layerKvElems;
  uint16_t* vCache = kCache + layerKvElems;
  QkNormRopeArgs r;
  r.qIn = b.qkv;
  r.kIn = b.qkv + nH * D;
  r.vIn = b.qkv + (nH + nKv) * D;
  r.qRowStride = r.kRowStride = r.vRowStride = qkvRows;
  r.qOut = b.q;
  r.qNorm = c.qkNorm ? w.qNorm : nullptr;
  r.kNorm = c.qkNorm ? w.kNorm : nullptr;
  r.invFreq = b.invFreq;
  r.attentionScale = ropeAttentionScale(c);
  r.positions = positions;
  r.slotMapping = slots;
  r.kCache = kCache;
  r.vCache = vCache;
  r.rows = rows;
  r.numHeads = nH;
  r.numKvHeads = nKv;
  r.headDim = D;
  r.eps = eps;
  qkNormRope(r, stream_);

  PagedAttentionArgs at;
  at.q = b.q;
  at.kCache = kCache;
  at.vCache = vCache;
  at.blockTables = blockTables;
  at.positions = positions;
  at.out = b.attnOut;
  at.workspace = b.attentionWorkspace;
  at.splitCounters = splitCounters_.as<int32_t>();
  at.numQueries = rows;
  at.numHeads = nH;
  at.numKvHeads = nKv;
  at.headDim = D;
  at.blockSize = options_.blockSize;
  at.maxBlocksPerSeq = maxBlocksPerSeq_;
  at.numSplits = attentionSplits(shapeRows, nKv, backend_.multiProcessors());
  AFD_CHECK(attentionWorkspaceBytes(rows, nH, D, at.numSplits) <= attentionWorkspaceBytes_,
            "MoeDecoder: attention workspace too small for " << rows << " rows x " << at.numSplits << " splits");
  at.scale = 1.0f / std::sqrt(static_cast<float>(D));
  if (shapeRows != rows) {  // a split stage runs the kernel family the whole step would (picked by query count)
    PagedAttentionArgs whole = at;
    whole.numQueries = shapeRows;
    at.kernel = resolveAttentionKernel(whole);
  }
  pagedAttention(at, stream_);

  LinearArgs o;
  o.x = b.attnOut;
  o.xIsF32 = true;
  if (shapeRows > kSmallRowsMax && cublas != nullptr) {
    convertF32ToBf16(b.attnOut, b.attnOutBf16, static_cast<int64_t>(rows) * nH * D, stream_);
    o.x = b.attnOutBf16;
    o.xIsF32 = false;
  }
  o.w = w.o;
  o.rows = rows;
  o.n = H;
  o.k = nH * D;
  o.out = residual;
  o.ldOut = H;
  o.epilogue = Epilogue::AccumulateF32;
  denseLinear(o, shapeRows);
  addRmsNorm(residual, nullptr, w.postNorm, kBf16, xNorm, true, rows, H, eps, stream_);
}

void MoeDecoder::enqueueRouter(int l, const void* xIn, int rows, float* logits, int shapeRows) {
  shapeRows = checkShapeRows(rows, shapeRows);
  const ModelConfig& c = config_;
  const int H = static_cast<int>(c.hiddenSize), E = c.numExperts, K = c.numExpertsPerTok;
  if (moeRouterRouteSupported(shapeRows, H, E, K)) {
    // The logits of the fused router kernel, bit for bit (what the colocated step routes
    // on; a GEMM would sum in another order and can flip near-tie top-k choices). Its
    // top-k and permutation land in this decoder's own routing buffers, unused here.
    Buffers& b = *buf_;
    const MoeRouterRouteArgs ra{xIn,       layers_[l].router, logits, rows, H, E, K, c.normTopkProb, b.topkIds,
                                b.topkWeights, moeGridSlots(shapeRows, E, K), b.perm, routerCounter_.as<int32_t>()};
    moeRouterRoute(ra, stream_);
    return;
  }
  LinearArgs router;
  router.x = xIn;
  router.w = layers_[l].router;
  router.rows = rows;
  router.n = config_.numExperts;
  router.k = static_cast<int>(config_.hiddenSize);
  router.out = logits;
  router.ldOut = config_.numExperts;
  router.epilogue = Epilogue::StoreF32;
  denseLinear(router, shapeRows);
}

void MoeDecoder::enqueueFfnHalf(int l, const void* xIn, int rows, float* out, bool withResidualNorm, void* normOut,
                                const float* routerLogits, int shapeRows) {
  shapeRows = checkShapeRows(rows, shapeRows);
  const ModelConfig& c = config_;
  const int H = static_cast<int>(c.hiddenSize), E = c.numExperts, K = c.numExpertsPerTok;
  const int I = static_cast<int>(c.moeIntermediateSize);
  const Layer& w = layers_[l];
  Buffers& b = *buf_;
  const float eps = static_cast<float>(c.rmsNormEps);

  const int slots = moeGridSlots(shapeRows, E, K);  // the unsplit step's grid (>= this stage's need)
  MoePermutation perm = b.perm;
  perm.activeCount = b.activeCounts + l;
  if (routerLogits == nullptr && moeRouterRouteSupported(shapeRows, H, E, K)) {
    // Few rows: router GEMV, top-k and permutation in one launch.
    const MoeRouterRouteArgs ra{xIn,  w.router,  b.routerLogits, rows,  H,     E,    K, c.normTopkProb,
                                b.topkIds, b.topkWeights, slots, perm, routerCounter_.as<int32_t>()};
    moeRouterRoute(ra, stream_);
  } else {
    if (routerLogits == nullptr) enqueueRouter(l, xIn, rows, b.routerLogits, shapeRows);
    const float* logits = routerLogits != nullptr ? routerLogits : b.routerLogits;
    moeRoute(logits, rows, E, K, c.normTopkProb, b.topkIds, b.topkWeights, slots, perm, stream_);
  }

  LinearArgs gu;
  gu.x = xIn;
  gu.xRowIndex = perm.sortedSourceRow;
  gu.w = w.gate;
  gu.wUp = w.up;
  gu.groupStride = static_cast<int64_t>(I) * H;
  gu.groupOffsets = perm.expertOffsets;
  gu.activeGroups = perm.activeExperts;
  gu.rows = rows * K;
  gu.n = I;
  gu.k = H;
  gu.out = b.act;
  gu.ldOut = I;
  gu.epilogue = Epilogue::SiluMulBf16;
  gatedMlp(gu, DownWeights{w.down}, b.expertOut, slots, nullptr, stream_);

  MoeCombineArgs cb;
  cb.expertOut = b.expertOut;
  cb.pairPosition = perm.pairPosition;
  cb.topkWeights = b.topkWeights;
  cb.out = out;
  cb.accumulate = withResidualNorm;
  cb.normWeight = withResidualNorm ? nextNormWeight(l) : nullptr;
  cb.normOut = withResidualNorm ? normOut : nullptr;
  cb.rows = rows;
  cb.hidden = H;
  cb.topK = K;
  cb.eps = eps;
  moeCombine(cb, stream_);
}

void MoeDecoder::enqueueStep(int rows) {
  enqueueEmbed(rows);
  for (int l = 0; l < config_.numLayers; ++l) enqueueLayer(l, rows);
  enqueueHead(rows);
}

void MoeDecoder::enqueueEmbed(int rows) {
  const ModelConfig& c = config_;
  const int H = static_cast<int>(c.hiddenSize), V = static_cast<int>(c.vocabSize);
  Buffers& b = *buf_;
  embeddingLookup(b.tokenIds, b.embed, kBf16, b.residual, rows, H, V, stream_);
  addRmsNorm(b.residual, nullptr, layers_[0].inputNorm, kBf16, b.xNorm, true, rows, H,
             static_cast<float>(c.rmsNormEps), stream_);
}

void MoeDecoder::enqueueHead(int rows) {
  const ModelConfig& c = config_;
  const int H = static_cast<int>(c.hiddenSize), V = static_cast<int>(c.vocabSize);
  Buffers& b = *buf_;
  LinearArgs head;
  head.x = b.xNorm;
  head.w = b.lmHead;
  head.rows = rows;
  head.n = V;
  head.k = H;
  head.out = b.logits;
  head.ldOut = V;
  head.epilogue = Epilogue::StoreF32;
  linear(head, 1, backend_.cublas(), stream_);
  SamplingArgs s;
  s.logits = b.logits;
  s.temperature = b.temperature;
  s.topK = b.topK;
  s.topP = b.topP;
  s.seed = b.seeds;
  s.position = b.positions;
  s.tokens = b.tokens;
  s.rows = rows;
  s.vocab = V;
  sampleTokens(s, stream_);
}

std::vector<int32_t> MoeDecoder::step(const DecodeInput& input) {
  // A bucketed batch is padded and replayed from its graph; any other size runs eagerly.
  const int bucket = paddedBatch(input.rows);
  const int padded = bucket > 0 ? bucket : input.rows;
  upload(input, padded);
  launch(padded, options_.useGraphs && bucket > 0);
  return downloadTokens(input.rows);
}

std::vector<int32_t> MoeDecoder::downloadTokens(int rows) {
  std::vector<int32_t> tokens(rows);
  AFD_CUDA_CHECK(cudaMemcpyAsync(tokens.data(), buf_->tokens, 4ull * rows, cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return tokens;
}

std::vector<float> MoeDecoder::downloadLogits(int rows) {
  std::vector<float> logits(static_cast<size_t>(rows) * config_.vocabSize);
  AFD_CUDA_CHECK(cudaMemcpyAsync(logits.data(), buf_->logits, 4 * logits.size(), cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return logits;
}

std::vector<int32_t> MoeDecoder::activeExpertsPerLayer() {
  std::vector<int32_t> counts(config_.numLayers);
  AFD_CUDA_CHECK(cudaMemcpyAsync(counts.data(), buf_->activeCounts, 4ull * counts.size(), cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return counts;
}

}  // namespace afd::cuda
