#include "cuda/ep/ep-exchange-base.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/comm-error.h"
#include "core/error.h"
#include "core/host-name.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

namespace {
size_t align256(size_t n) { return (n + 255) / 256 * 256; }
}  // namespace

EpExchangeBase::EpExchangeBase(CudaBackend& backend, const EpDeviceShape& shape, const std::string& what, size_t extraRegionBytes)
    : backend_(backend),
      stream_(backend.stream()),
      shape_(shape),
      rowBytes_(static_cast<size_t>(shape.hiddenSize) * dtypeBytes(shape.act)) {
  const int F = shape.numRanks;
  const std::string who = "expert-parallel " + what + " exchange";
  AFD_CHECK(F >= 2 && F <= ep::kEpMaxRanks, who << ": " << F << " FFN ranks (2.." << ep::kEpMaxRanks << " supported)");
  AFD_CHECK(shape.act == DType::BF16 || shape.act == DType::F32, who << ": activations must be bf16 or f32");
  AFD_CHECK(rowBytes_ % 16 == 0, who << ": hidden size " << shape.hiddenSize << " rows are not a multiple of 16 bytes");
  AFD_CHECK(shape.capMax > 0 && shape.topK > 0 && shape.numExperts > 0, who << ": empty shape");
  const size_t sectionRows = static_cast<size_t>(F) * shape.capMax;
  layout_ = ep::dispatchLayout(F, shape.capMax, shape.topK, rowBytes_);
  combineBytes_ = align256(sectionRows * rowBytes_);
  const std::string sizes = std::to_string(shape.capMax) + " rows per section x " + std::to_string(F) + " ranks";
  region_ = DeviceBuffer(who + " region (" + sizes + ")", blocksBytes() + extraRegionBytes);
  AFD_CUDA_CHECK(cudaMemset(region_.data(), 0, region_.bytes()));

  const size_t K = static_cast<size_t>(shape.topK), L = static_cast<size_t>(shape.numLayers);
  size_t offsets[10];
  size_t used = 0;
  auto take = [&](int i, size_t bytes) {
    offsets[i] = used;
    used += align256(bytes);
  };
  take(0, 4 * shape.capMax * F);                 // slotOf
  take(1, 4 * shape.capMax * F);                 // tokenAt
  take(2, 4 * F);                                // counts
  take(3, 2 * shape.capMax);                     // valid
  take(4, sectionRows * rowBytes_);              // partial
  take(5, 4 * sectionRows * K);                  // warm ids
  take(6, 4 * sectionRows * K);                  // warm weights
  take(7, 8 * L * shape.numExperts);             // tokens per expert
  take(8, 8 * L);                                // rows sent
  take(9, 8 * L);                                // rows received
  local_ = DeviceBuffer(who + " buffers (" + sizes + ")", used);
  AFD_CUDA_CHECK(cudaMemset(local_.data(), 0, local_.bytes()));
  char* base = local_.as<char>();
  slotOf_ = reinterpret_cast<int32_t*>(base + offsets[0]);
  tokenAt_ = reinterpret_cast<int32_t*>(base + offsets[1]);
  counts_ = reinterpret_cast<int32_t*>(base + offsets[2]);
  valid_ = reinterpret_cast<uint8_t*>(base + offsets[3]);
  partial_ = base + offsets[4];
  warmIds_ = reinterpret_cast<int32_t*>(base + offsets[5]);
  warmWeights_ = reinterpret_cast<float*>(base + offsets[6]);
  tokens_ = reinterpret_cast<unsigned long long*>(base + offsets[7]);
  rowsSent_ = reinterpret_cast<unsigned long long*>(base + offsets[8]);
  rowsRecv_ = reinterpret_cast<unsigned long long*>(base + offsets[9]);
  AFD_CUDA_CHECK(cudaMemset(warmIds_, 0xff, 4 * sectionRows * K));  // every pair masked

  AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&validHost_), 2 * shape.capMax, cudaHostAllocDefault));
  AFD_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  ep::epPreload();
}

EpExchangeBase::~EpExchangeBase() {
  if (done_) cudaEventDestroy(done_);
  if (validHost_) cudaFreeHost(validHost_);
}

void EpExchangeBase::beginStep(int64_t cap, const std::vector<uint8_t> valid[2]) {
  AFD_CHECK(cap >= 1 && cap <= shape_.capMax, "expert parallelism: a stage of " << cap << " rows exceeds the exchange's "
                                                                                << shape_.capMax << " rows per section "
                                                                                   "(--max-num-batched-tokens and the graph buckets size it)");
  cap_ = cap;
  std::memset(validHost_, 0, 2 * shape_.capMax);
  for (int s = 0; s < 2; ++s) {
    AFD_CHECK(static_cast<int64_t>(valid[s].size()) <= cap, "expert parallelism: " << valid[s].size() << " row flags for a section of " << cap);
    std::memcpy(validHost_ + s * shape_.capMax, valid[s].data(), valid[s].size());
  }
  // The previous step is complete (finishStep), so the pinned staging is free to reuse.
  AFD_CUDA_CHECK(cudaMemcpyAsync(valid_, validHost_, 2 * shape_.capMax, cudaMemcpyHostToDevice, stream_));
}

void EpExchangeBase::moeLayer(int layer, int stage, const Tensor& x, const Tensor& ids, const Tensor& weights,
                              const Tensor* addend, const std::vector<ExpertWeights>& experts, Tensor& out) {
  const int F = shape_.numRanks, K = shape_.topK, me = shape_.rank;
  const int64_t T = x.ndim == 2 ? x.dim(0) : 0, H = shape_.hiddenSize, N = F * cap_;
  AFD_CHECK(cap_ > 0, "expert parallelism: moeLayer before beginStep");
  AFD_CHECK(T <= cap_, "expert parallelism: " << T << " rows exceed this step's section of " << cap_);
  AFD_CHECK(layer >= 0 && layer < shape_.numLayers && (stage == 0 || stage == 1), "expert parallelism: layer " << layer << " stage " << stage);
  const uint8_t* valid = valid_ + stage * shape_.capMax;
  // 1. Plan: which tokens go to which rank, at which slot.
  ep::PlanArgs plan;
  plan.ids = T > 0 ? ids.ptr<int32_t>() : nullptr;
  plan.valid = valid;
  plan.rows = static_cast<int>(T);
  plan.topK = K;
  plan.numExperts = shape_.numExperts;
  plan.numRanks = F;
  plan.rank = me;
  plan.cap = static_cast<int>(cap_);
  plan.slotOf = slotOf_;
  plan.tokenAt = tokenAt_;
  plan.counts = counts_;
  plan.tokensPerExpert = tokens_ + static_cast<size_t>(layer) * shape_.numExperts;
  plan.rowsSent = rowsSent_ + layer;
  ep::epPlan(plan, stream_);
  // 2. Dispatch: every owner's section, then the transport brings every source's here.
  ep::PackArgs pack;
  pack.x = T > 0 ? x.data : nullptr;
  pack.ids = plan.ids;
  pack.weights = T > 0 ? weights.ptr<float>() : nullptr;
  pack.tokenAt = tokenAt_;
  pack.counts = counts_;
  pack.rowBytes = rowBytes_;
  pack.topK = K;
  pack.numExperts = shape_.numExperts;
  pack.numRanks = F;
  pack.rank = me;
  pack.cap = static_cast<int>(cap_);
  pack.layout = layout_;
  pack.dst = dispatchTargets(stage, &pack.sectionByDestination);
  ep::epPack(pack, stream_);
  moveDispatch(layer, stage);
  // 3. This rank's experts over every section (masked pairs do nothing).
  char* block = dispatchBlock(stage);
  runOwnExperts(block + layout_.rows, reinterpret_cast<const int32_t*>(block + layout_.ids),
                reinterpret_cast<const float*>(block + layout_.weights), N, experts);
  // 4. Partial sums back to their sources.
  ep::ReturnArgs ret;
  ret.partial = partial_;
  ret.counts = reinterpret_cast<const uint32_t*>(block);
  ret.rowBytes = rowBytes_;
  ret.numRanks = F;
  ret.rank = me;
  ret.cap = static_cast<int>(cap_);
  ret.dst = returnTargets(stage);
  ret.rowsReceived = rowsRecv_ + layer;
  ep::epReturn(ret, stream_);
  moveCombine(layer, stage);
  // 5. Sum the partials in rank order (+ shared experts) into the output rows.
  ep::CombineArgs c;
  c.combine = combineBlock(stage);
  c.slotOf = slotOf_;
  c.valid = valid;
  c.addend = addend != nullptr ? addend->data : nullptr;
  c.out = T > 0 ? out.data : nullptr;
  c.rows = static_cast<int>(T);
  c.hidden = static_cast<int>(H);
  c.numRanks = F;
  c.cap = static_cast<int>(cap_);
  c.bf16 = shape_.act == DType::BF16;
  ep::epCombine(c, stream_);
}

void EpExchangeBase::runOwnExperts(const void* rows, const int32_t* ids, const float* weights, int64_t N,
                                   const std::vector<ExpertWeights>& experts) {
  const int64_t H = shape_.hiddenSize, K = shape_.topK;
  Tensor x(const_cast<void*>(rows), shape_.act, {N, H});
  Tensor i(const_cast<int32_t*>(ids), DType::I32, {N, K});
  Tensor w(const_cast<float*>(weights), DType::F32, {N, K});
  Tensor partial(partial_, shape_.act, {N, H});
  x.device = i.device = w.device = partial.device = backend_.device();
  backend_.moeExpertsMasked(x, i, w, experts, partial);
}

void EpExchangeBase::warm(int64_t cap, const std::vector<ExpertWeights>& experts) {
  const int64_t N = shape_.numRanks * std::min(cap, shape_.capMax);
  runOwnExperts(region_.as<char>() + layout_.rows, warmIds_, warmWeights_, N, experts);
}

void EpExchangeBase::waitStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer,
                              const std::string& deadlineWhy) {
  AFD_CUDA_CHECK(cudaEventRecord(done_, stream_));
  for (unsigned polls = 0;; ++polls) {
    const cudaError_t q = cudaEventQuery(done_);
    checkTransport(polls);  // before success: a device wait that timed out still completes the stream
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) AFD_CUDA_CHECK(q);
    if ((polls & 15u) == 0) {
      const int lost = closedPeer ? closedPeer() : -1;
      if (lost >= 0) fail(comm::CommErrorKind::kPeerClosed, "FFN rank " + std::to_string(lost) + " of the expert-parallel group closed its link mid-step");
    }
    if (stop && stop->load()) fail(comm::CommErrorKind::kStopped, "stopped inside an expert-parallel step");
    if (deadline.passed()) fail(comm::CommErrorKind::kTimeout, deadlineWhy);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void EpExchangeBase::fail(comm::CommErrorKind kind, const std::string& why) {
  abort();
  throw comm::EpGroupError(kind, why + failNote_);
}

EpBlobHeader EpExchangeBase::blobHeader(const char* magic) const {
  EpBlobHeader h{};
  std::memcpy(h.magic, magic, sizeof h.magic);
  h.rank = shape_.rank;
  h.numRanks = shape_.numRanks;
  h.device = backend_.device().index;
  h.pid = static_cast<int32_t>(getpid());
  h.capMax = shape_.capMax;
  h.regionBytes = region_.bytes();
  const std::string host = hostName();
  std::memcpy(h.host, host.data(), std::min(host.size(), sizeof h.host - 1));
  return h;
}

void EpExchangeBase::checkBlobCount(const std::vector<std::vector<uint8_t>>& blobs, const char* what) const {
  AFD_CHECK(static_cast<int>(blobs.size()) == shape_.numRanks,
            "expert-parallel " << what << " exchange: " << blobs.size() << " bootstrap blobs for " << shape_.numRanks << " ranks");
}

void EpExchangeBase::readBlob(const std::vector<uint8_t>& blob, int r, const char* magic, void* out, size_t bytes,
                              const char* what) const {
  const std::string who = "FFN rank " + std::to_string(r) + " of the expert-parallel group";
  if (blob.size() != bytes || std::memcmp(blob.data(), magic, sizeof EpBlobHeader::magic) != 0) {
    throw comm::EpGroupError(comm::CommErrorKind::kProtocol, who + " sent a " + std::to_string(blob.size()) + "-byte bootstrap that is not " +
                                                                 what + " exchange's (" + std::to_string(bytes) +
                                                                 " bytes); run every FFN rank with the same build and epTransport");
  }
  std::memcpy(out, blob.data(), bytes);
  EpBlobHeader& h = *static_cast<EpBlobHeader*>(out);
  h.host[sizeof h.host - 1] = '\0';
  if (h.rank != r || h.numRanks != shape_.numRanks || h.capMax != shape_.capMax || h.regionBytes != region_.bytes()) {
    throw comm::EpGroupError(comm::CommErrorKind::kConfig,
                             who + " has blocks of " + std::to_string(h.regionBytes) + " bytes for " + std::to_string(h.capMax) +
                                 " rows per section (rank " + std::to_string(h.rank) + " of " + std::to_string(h.numRanks) +
                                 "); this rank's are " + std::to_string(region_.bytes()) + " bytes for " + std::to_string(shape_.capMax) +
                                 ": give every FFN rank the same --max-num-batched-tokens and graph buckets");
  }
}

EpDeviceCounters EpExchangeBase::counters() {
  const size_t L = static_cast<size_t>(shape_.numLayers), E = static_cast<size_t>(shape_.numExperts);
  EpDeviceCounters c;
  c.tokensPerExpert.resize(L * E);
  c.rowsSent.resize(L);
  c.rowsReceived.resize(L);
  AFD_CUDA_CHECK(cudaMemcpyAsync(c.tokensPerExpert.data(), tokens_, 8 * L * E, cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaMemcpyAsync(c.rowsSent.data(), rowsSent_, 8 * L, cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaMemcpyAsync(c.rowsReceived.data(), rowsRecv_, 8 * L, cudaMemcpyDeviceToHost, stream_));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return c;
}

}  // namespace afd::cuda
