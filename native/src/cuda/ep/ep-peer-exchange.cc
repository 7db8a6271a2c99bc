#include "cuda/ep/ep-peer-exchange.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "comm/comm-error.h"
#include "core/error.h"
#include "core/host-name.h"
#include "cuda/cuda-check.h"

namespace afd::cuda {

namespace {

constexpr char kMagic[8] = {'A', 'F', 'D', 'E', 'P', 'X', '1', '\0'};

// One rank's half of the bootstrap (fixed layout; every rank runs the same build).
struct Blob {
  char magic[8];
  int32_t rank = 0, numRanks = 0, device = 0, pid = 0;
  int64_t capMax = 0;
  uint64_t regionBytes = 0;
  uint64_t address = 0;  // the region's device address (used as is by ranks of the same process)
  char host[64];
  cudaIpcMemHandle_t handle;
};

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

EpPeerExchange::EpPeerExchange(CudaBackend& backend, const EpDeviceShape& shape)
    : backend_(backend),
      stream_(backend.stream()),
      shape_(shape),
      rowBytes_(static_cast<size_t>(shape.hiddenSize) * dtypeBytes(shape.act)) {
  const int F = shape.numRanks;
  AFD_CHECK(F >= 2 && F <= ep::kEpMaxRanks, "expert-parallel peer exchange: " << F << " FFN ranks (2.." << ep::kEpMaxRanks << " supported)");
  AFD_CHECK(shape.act == DType::BF16 || shape.act == DType::F32, "expert-parallel peer exchange: activations must be bf16 or f32");
  AFD_CHECK(rowBytes_ % 16 == 0, "expert-parallel peer exchange: hidden size " << shape.hiddenSize << " rows are not a multiple of 16 bytes");
  AFD_CHECK(shape.capMax > 0 && shape.topK > 0 && shape.numExperts > 0, "expert-parallel peer exchange: empty shape");
  const size_t sectionRows = static_cast<size_t>(F) * shape.capMax;
  layout_ = ep::dispatchLayout(F, shape.capMax, shape.topK, rowBytes_);
  combineBytes_ = align256(sectionRows * rowBytes_);
  flagsOffset_ = 2 * (layout_.bytes + combineBytes_);
  const std::string sizes = std::to_string(shape.capMax) + " rows per section x " + std::to_string(F) + " ranks";
  region_ = DeviceBuffer("expert-parallel exchange region (" + sizes + ")", flagsOffset_ + 8 * 4 * F);
  AFD_CUDA_CHECK(cudaMemset(region_.data(), 0, region_.bytes()));

  const size_t K = static_cast<size_t>(shape.topK), L = static_cast<size_t>(shape.numLayers);
  size_t offsets[12];
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
  take(7, 8 * 8 * F);                            // seq
  take(8, 8 * L * shape.numExperts);             // tokens per expert
  take(9, 8 * L);                                // rows sent
  take(10, 8 * L);                               // rows received
  local_ = DeviceBuffer("expert-parallel exchange buffers (" + sizes + ")", used);
  AFD_CUDA_CHECK(cudaMemset(local_.data(), 0, local_.bytes()));
  char* base = local_.as<char>();
  slotOf_ = reinterpret_cast<int32_t*>(base + offsets[0]);
  tokenAt_ = reinterpret_cast<int32_t*>(base + offsets[1]);
  counts_ = reinterpret_cast<int32_t*>(base + offsets[2]);
  valid_ = reinterpret_cast<uint8_t*>(base + offsets[3]);
  partial_ = base + offsets[4];
  warmIds_ = reinterpret_cast<int32_t*>(base + offsets[5]);
  warmWeights_ = reinterpret_cast<float*>(base + offsets[6]);
  seq_ = reinterpret_cast<unsigned long long*>(base + offsets[7]);
  tokens_ = reinterpret_cast<unsigned long long*>(base + offsets[8]);
  rowsSent_ = reinterpret_cast<unsigned long long*>(base + offsets[9]);
  rowsRecv_ = reinterpret_cast<unsigned long long*>(base + offsets[10]);
  AFD_CUDA_CHECK(cudaMemset(warmIds_, 0xff, 4 * sectionRows * K));  // every pair masked

  AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&hostError_), sizeof(int), cudaHostAllocMapped));
  *hostError_ = 0;
  AFD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceError_), hostError_, 0));
  AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&validHost_), 2 * shape.capMax, cudaHostAllocDefault));
  AFD_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  bases_.assign(F, nullptr);
  mapped_.assign(F, false);
  bases_[shape.rank] = region_.as<char>();
  ep::epPreload();
}

EpPeerExchange::~EpPeerExchange() {
  abort();
  // Work still queued may touch the regions: let it drain (every wait of this exchange
  // returns at once now) before they are unmapped and freed.
  cudaStreamSynchronize(stream_);
  cudaGetLastError();
  for (size_t r = 0; r < bases_.size(); ++r) {
    if (mapped_[r]) cudaIpcCloseMemHandle(bases_[r]);
  }
  if (done_) cudaEventDestroy(done_);
  if (validHost_) cudaFreeHost(validHost_);
  if (hostError_) cudaFreeHost(hostError_);
}

std::vector<uint8_t> EpPeerExchange::bootstrapBlob() const {
  Blob b{};
  std::memcpy(b.magic, kMagic, sizeof b.magic);
  b.rank = shape_.rank;
  b.numRanks = shape_.numRanks;
  b.device = backend_.device().index;
  b.pid = static_cast<int32_t>(getpid());
  b.capMax = shape_.capMax;
  b.regionBytes = region_.bytes();
  b.address = reinterpret_cast<uint64_t>(region_.data());
  const std::string h = hostName();
  std::memcpy(b.host, h.data(), std::min(h.size(), sizeof b.host - 1));
  AFD_CUDA_CHECK(cudaIpcGetMemHandle(&b.handle, region_.data()));
  std::vector<uint8_t> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

void EpPeerExchange::connect(const std::vector<std::vector<uint8_t>>& blobs) {
  const int F = shape_.numRanks;
  AFD_CHECK(static_cast<int>(blobs.size()) == F, "expert-parallel peer exchange: " << blobs.size() << " bootstrap blobs for " << F << " ranks");
  const std::string mine = hostName();
  for (int r = 0; r < F; ++r) {
    if (r == shape_.rank) continue;
    const std::string who = "FFN rank " + std::to_string(r) + " of the expert-parallel group";
    Blob b{};
    if (blobs[r].size() != sizeof b || std::memcmp(blobs[r].data(), kMagic, sizeof kMagic) != 0) {
      throw comm::EpGroupError(comm::CommErrorKind::kProtocol,
                               who + " sent a " + std::to_string(blobs[r].size()) + "-byte bootstrap that is not a peer exchange's (" +
                                   std::to_string(sizeof b) + " bytes); run every FFN rank with the same build and epTransport");
    }
    std::memcpy(&b, blobs[r].data(), sizeof b);
    b.host[sizeof b.host - 1] = '\0';
    if (mine != b.host) {
      throw comm::EpGroupError(comm::CommErrorKind::kConfig, "epTransport peer needs every FFN rank on one host: " + who + " runs on " +
                                                                 b.host + ", this rank on " + mine + "; use epTransport tcp across hosts");
    }
    if (b.rank != r || b.numRanks != F || b.capMax != shape_.capMax || b.regionBytes != region_.bytes()) {
      throw comm::EpGroupError(comm::CommErrorKind::kConfig,
                               who + " exports a region of " + std::to_string(b.regionBytes) + " bytes for " + std::to_string(b.capMax) +
                                   " rows per section (rank " + std::to_string(b.rank) + " of " + std::to_string(b.numRanks) +
                                   "); this rank's is " + std::to_string(region_.bytes()) + " bytes for " + std::to_string(shape_.capMax) +
                                   ": give every FFN rank the same --max-num-batched-tokens and graph buckets");
    }
    if (b.pid == static_cast<int32_t>(getpid())) {
      bases_[r] = reinterpret_cast<char*>(b.address);  // same process: CUDA refuses to open its own handle
      continue;
    }
    void* p = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&p, b.handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw comm::EpGroupError(comm::CommErrorKind::kConfig, std::string("expert-parallel peer exchange: cannot map the memory of ") + who +
                                                                 " (device " + std::to_string(b.device) + ", pid " + std::to_string(b.pid) +
                                                                 "; cudaIpcOpenMemHandle: " + cudaGetErrorString(e) +
                                                                 "); its GPU must be visible here with P2P, or use epTransport tcp");
    }
    bases_[r] = static_cast<char*>(p);
    mapped_[r] = true;
  }
}

ep::RankPointers EpPeerExchange::pointers(size_t offset) const {
  ep::RankPointers p{};
  for (int r = 0; r < shape_.numRanks; ++r) p.at[r] = bases_[r] + offset;
  return p;
}

void EpPeerExchange::beginStep(int64_t cap, const std::vector<uint8_t> valid[2]) {
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

void EpPeerExchange::signalAndWait(int layer, int phase, int stage) {
  ep::RankFlags flags{};
  for (int r = 0; r < shape_.numRanks; ++r) {
    flags.at[r] = reinterpret_cast<unsigned long long*>(bases_[r] + flagOffset(phase, stage, shape_.rank));
  }
  ep::epSignal(flags, seqAt(0, phase, stage), shape_.numRanks, stream_);
  const unsigned long long timeoutNs = static_cast<unsigned long long>(shape_.waitDeadlineMs) * 1000000ull;
  ep::epWait(reinterpret_cast<unsigned long long*>(region_.as<char>() + flagOffset(phase, stage, 0)), seqAt(1, phase, stage),
             shape_.numRanks, timeoutNs, (layer * 2 + phase) * 2 + stage, deviceError_, stream_);
}

void EpPeerExchange::moeLayer(int layer, int stage, const Tensor& x, const Tensor& ids, const Tensor& weights,
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
  // 2. Dispatch into every owner's block, then the flags.
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
  pack.dst = pointers(dispatchOffset(stage));
  ep::epPack(pack, stream_);
  signalAndWait(layer, 0, stage);
  // 3. This rank's experts over every section (masked pairs do nothing).
  char* block = region_.as<char>() + dispatchOffset(stage);
  runOwnExperts(block + layout_.rows, reinterpret_cast<const int32_t*>(block + layout_.ids),
                reinterpret_cast<const float*>(block + layout_.weights), N, experts);
  // 4. Partial sums back to their sources, then the flags.
  ep::ReturnArgs ret;
  ret.partial = partial_;
  ret.counts = reinterpret_cast<const uint32_t*>(block);
  ret.rowBytes = rowBytes_;
  ret.numRanks = F;
  ret.rank = me;
  ret.cap = static_cast<int>(cap_);
  ret.dst = pointers(combineOffset(stage));
  ret.rowsReceived = rowsRecv_ + layer;
  ep::epReturn(ret, stream_);
  signalAndWait(layer, 1, stage);
  // 5. Sum the partials in rank order (+ shared experts) into the output rows.
  ep::CombineArgs c;
  c.combine = region_.as<char>() + combineOffset(stage);
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

void EpPeerExchange::runOwnExperts(const void* rows, const int32_t* ids, const float* weights, int64_t N,
                                   const std::vector<ExpertWeights>& experts) {
  const int64_t H = shape_.hiddenSize, K = shape_.topK;
  Tensor x(const_cast<void*>(rows), shape_.act, {N, H});
  Tensor i(const_cast<int32_t*>(ids), DType::I32, {N, K});
  Tensor w(const_cast<float*>(weights), DType::F32, {N, K});
  Tensor partial(partial_, shape_.act, {N, H});
  x.device = i.device = w.device = partial.device = backend_.device();
  backend_.moeExpertsMasked(x, i, w, experts, partial);
}

void EpPeerExchange::warm(int64_t cap, const std::vector<ExpertWeights>& experts) {
  const int64_t N = shape_.numRanks * std::min(cap, shape_.capMax);
  runOwnExperts(region_.as<char>() + layout_.rows, warmIds_, warmWeights_, N, experts);
}

void EpPeerExchange::fail(comm::CommErrorKind kind, const std::string& why) {
  abort();
  throw comm::EpGroupError(kind, why);
}

std::string EpPeerExchange::describeTimeout(int err) const {
  const int F = shape_.numRanks, peer = (err - 1) % F, place = (err - 1) / F;
  const int stage = place % 2, phase = (place / 2) % 2, layer = place / 4;
  return "FFN rank " + std::to_string(peer) + " of the expert-parallel group did not answer within " +
         std::to_string(shape_.waitDeadlineMs) + " ms inside the step (device wait for its " + (phase == 0 ? "dispatch" : "combine") +
         " of layer " + std::to_string(layer) + ", stage " + std::to_string(stage) + ")";
}

void EpPeerExchange::finishStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer) {
  AFD_CUDA_CHECK(cudaEventRecord(done_, stream_));
  for (unsigned polls = 0;; ++polls) {
    const cudaError_t q = cudaEventQuery(done_);
    const int err = *static_cast<volatile int*>(hostError_);
    if (err > 0) fail(comm::CommErrorKind::kTimeout, describeTimeout(err));
    if (err < 0) fail(comm::CommErrorKind::kPeerClosed, "the expert-parallel peer exchange was aborted earlier; the group forms again");
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) AFD_CUDA_CHECK(q);
    if ((polls & 15u) == 0) {
      const int lost = closedPeer ? closedPeer() : -1;
      if (lost >= 0) {
        fail(comm::CommErrorKind::kPeerClosed, "FFN rank " + std::to_string(lost) + " of the expert-parallel group closed its link mid-step");
      }
    }
    if (stop && stop->load()) fail(comm::CommErrorKind::kStopped, "stopped inside an expert-parallel step");
    if (deadline.passed()) fail(comm::CommErrorKind::kTimeout, "the expert-parallel step did not finish within the step deadline");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void EpPeerExchange::abort() {
  if (hostError_ && *hostError_ == 0) *static_cast<volatile int*>(hostError_) = -1;
}

EpDeviceCounters EpPeerExchange::counters() {
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

namespace afd {

std::unique_ptr<EpDeviceExchange> buildEpPeerExchange(Backend& backend, const EpDeviceShape& shape, comm::EpMesh& mesh,
                                                      comm::StopFlag stop) {
  auto* cudaBackend = dynamic_cast<cuda::CudaBackend*>(&backend);
  AFD_CHECK(cudaBackend != nullptr, "epTransport peer needs the CUDA backend (this FFN engine runs on " << backend.name() << ")");
  AFD_CUDA_CHECK(cudaSetDevice(backend.device().index));  // the calling thread targets the engine's device
  auto ex = std::make_unique<cuda::EpPeerExchange>(*cudaBackend, shape);
  ex->connect(mesh.allGather(ex->bootstrapBlob(), 4096, stop));
  return ex;
}

}  // namespace afd
