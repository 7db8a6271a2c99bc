#include "ep/ffn-group.h"

#include <chrono>
#include <cstring>

#include "core/elapsed.h"
#include "cpu/kernels.h"

namespace afd {

namespace {
using Clock = std::chrono::steady_clock;
// A host tensor over a byte vector (resized to hold it).
Tensor hostTensor(std::vector<uint8_t>& bytes, DType dtype, int64_t rows, int64_t cols) {
  bytes.resize(static_cast<size_t>(rows * cols) * dtypeBytes(dtype));
  return Tensor(bytes.data(), dtype, {rows, cols});
}
}  // namespace

EpFfnGroup::EpFfnGroup(FfnModel& ffn, std::mutex& engineMutex, comm::EpMeshConfig mesh, int64_t maxRowsPerStage)
    : ffn_(ffn),
      backend_(ffn.backend()),
      engineMutex_(engineMutex),
      stats_(ffn.config().numLayers, std::max(1, ffn.config().numExperts)) {
  const ModelConfig& c = ffn.config();
  AFD_CHECK(c.numExperts > 0, "expert parallelism splits routed experts over the FFN ranks, but " << c.arch
                                                                                               << " here is a dense model; turn enableExpertParallel off");
  const ExpertRange want = expertRangeOf(mesh.rank, c.numExperts, mesh.numRanks);
  const ExpertRange& got = ffn.expertRange();
  AFD_CHECK(got.start == want.start && got.end == want.end,
            "FFN rank " << mesh.rank << " of " << mesh.numRanks << " holds experts [" << want.start << ", " << want.end
                        << ") under expert parallelism but its engine loaded [" << got.start << ", " << got.end
                        << "); build its load spec with that rank's expert range");
  mesh_ = std::make_unique<comm::EpMesh>(std::move(mesh));  // binds its port
  // The largest activation element is f32.
  maxDispatchBytes_ = maxRowsPerStage * c.numExpertsPerTok * static_cast<int64_t>(4 + c.hiddenSize * 4);
  send_.resize(mesh_->numRanks());
  recv_.resize(mesh_->numRanks());
  ySend_.resize(mesh_->numRanks());
  yRecv_.resize(mesh_->numRanks());
}

Tensor EpFfnGroup::onDevice(const Tensor& host, Buffer& buf) {
  if (backend_.sharesHostMemory()) return host;
  buf.growTo(&backend_, std::max<size_t>(host.bytes(), 4));
  Tensor d = host;
  d.data = buf.data();
  d.device = backend_.device();
  if (host.bytes() > 0) backend_.copyToDevice(d.data, host.data, host.bytes());
  return d;
}

void EpFfnGroup::toHost(const Tensor& dev, const Tensor& host) {
  if (dev.data != host.data && host.bytes() > 0) backend_.copyToHost(host.data, dev.data, host.bytes());
}

void EpFfnGroup::route(int layer, const Tensor& xr, const Tensor* lr) {
  const ModelConfig& c = ffn_.config();
  const int64_t R = xr.dim(0), E = c.numExperts, K = c.numExpertsPerTok;
  ids_.resize(static_cast<size_t>(R * K));
  weights_.resize(static_cast<size_t>(R * K));
  Tensor idsHost(ids_.data(), DType::I32, {R, K}), wHost(weights_.data(), DType::F32, {R, K});
  const bool host = backend_.sharesHostMemory();
  std::lock_guard<std::mutex> lock(engineMutex_);
  Tensor given = lr ? onDevice(*lr, lDev_) : Tensor{};
  // Router output scratch, when the router runs here (lr_ then holds no received logits).
  Tensor scratch;
  if (!lr) {
    scratch = hostTensor(lr_, DType::F32, R, E);
    if (!host) scratch = (lDev_.growTo(&backend_, scratch.bytes()), lDev_.view(DType::F32, {R, E}));
  }
  Tensor ids = host ? idsHost : (idsDev_.growTo(&backend_, idsHost.bytes()), idsDev_.view(DType::I32, {R, K}));
  Tensor w = host ? wHost : (wDev_.growTo(&backend_, wHost.bytes()), wDev_.view(DType::F32, {R, K}));
  // The layer's own routing (plain top-k or DeepSeek's grouped one), as the colocated FFN half runs it.
  ffn_.route(layer, lr ? xr : onDevice(xr, xDev_), lr ? &given : nullptr, scratch, ids, w);
  toHost(ids, idsHost);
  toHost(w, wHost);
}

void EpFfnGroup::addSharedExperts(int layer, const Tensor& xr, Tensor& combined) {
  if (!ffn_.hasSharedExperts(layer) || xr.dim(0) == 0) return;
  Tensor sharedHost = hostTensor(shared_, combined.dtype, combined.dim(0), combined.dim(1));
  std::lock_guard<std::mutex> lock(engineMutex_);
  Tensor c = onDevice(combined, combinedDev_);
  Tensor sh = sharedHost;
  if (!backend_.sharesHostMemory()) {
    sharedDev_.growTo(&backend_, sh.bytes());
    sh.data = sharedDev_.data();
    sh.device = backend_.device();
  }
  // out = routed + shared, as the colocated DeepSeek MoE adds them.
  ffn_.sharedExperts(layer, onDevice(xr, xDev_), sh);
  backend_.add(c, sh, c);
  toHost(c, combined);
}

void EpFfnGroup::runExperts(int layer, const Tensor& x, const int32_t* ids, Tensor& y) {
  const int64_t N = x.dim(0);
  ones_.assign(static_cast<size_t>(N), 1.0f);
  Tensor idsHost(const_cast<int32_t*>(ids), DType::I32, {N, 1}), onesHost(ones_.data(), DType::F32, {N, 1});
  std::lock_guard<std::mutex> lock(engineMutex_);
  Tensor yd = y;
  if (!backend_.sharesHostMemory()) {
    yAllDev_.growTo(&backend_, y.bytes());
    yd.data = yAllDev_.data();
    yd.device = backend_.device();
  }
  // One pair per row with weight 1: out = 0 + 1 * expert(x), the unweighted output (exact).
  backend_.moeExperts(onDevice(x, xAllDev_), onDevice(idsHost, idsAllDev_), onDevice(onesHost, onesDev_),
                      ffn_.layerWeights(layer).experts, yd);
  toHost(yd, y);
}

void EpFfnGroup::moeLayer(int layer, int stage, const Tensor& hidden, const Tensor* logits, const std::vector<uint8_t>& real,
                          Tensor& out, comm::StopFlag stop) {
  const ModelConfig& c = ffn_.config();
  const int64_t H = c.hiddenSize, E = c.numExperts, K = c.numExpertsPerTok, T = hidden.dim(0);
  const int F = mesh_->numRanks(), me = mesh_->rank();
  AFD_CHECK(hidden.ndim == 2 && hidden.dim(1) == H && out.ndim == 2 && out.dim(0) == T && out.dim(1) == H,
            "expert parallelism: hidden " << hidden.shapeString() << " / out " << out.shapeString() << " are not [rows, " << H << "]");
  AFD_CHECK(static_cast<int64_t>(real.size()) == T, "expert parallelism: " << real.size() << " row flags for " << T << " rows");
  AFD_CHECK(!logits || (logits->dtype == DType::F32 && logits->dim(0) == T && logits->dim(1) == E),
            "expert parallelism: router logits must be f32 [" << T << ", " << E << "]");
  const DType act = hidden.dtype;
  const size_t rowBytes = static_cast<size_t>(H) * dtypeBytes(act);

  // 1. Gather the real rows (placeholder rows of idle peers are not routed).
  realRows_.clear();
  for (int64_t r = 0; r < T; ++r) {
    if (real[r]) realRows_.push_back(r);
  }
  const int64_t R = static_cast<int64_t>(realRows_.size());
  Tensor xr = hostTensor(xr_, act, R, H);
  for (int64_t q = 0; q < R; ++q) std::memcpy(xr_.data() + q * rowBytes, static_cast<const char*>(hidden.data) + realRows_[q] * rowBytes, rowBytes);
  Tensor lr;
  if (logits && R > 0) {
    lr = hostTensor(lr_, DType::F32, R, E);
    for (int64_t q = 0; q < R; ++q) std::memcpy(lr.ptr<float>() + q * E, logits->ptr<float>() + realRows_[q] * E, E * 4);
  }

  // 2. Route, 3. plan the dispatch.
  if (R > 0) route(layer, xr, logits ? &lr : nullptr);
  const EpDispatchPlan plan = planDispatch(ids_.data(), R, static_cast<int>(K), static_cast<int>(E), F);
  for (int64_t i = 0; i < R * K; ++i) stats_.tokens(layer, ids_[i]).fetch_add(1, std::memory_order_relaxed);
  // Dispatch frame to owner d: [n] i32 expert ids, then [n, H] rows.
  std::vector<comm::ByteSpan> spans(F);
  uint64_t sent = 0;
  for (int d = 0; d < F; ++d) {
    const std::vector<int32_t>& pairs = plan.pairsOf[d];
    const size_t n = pairs.size();
    send_[d].resize(n * 4 + n * rowBytes);
    uint8_t* rows = send_[d].data() + n * 4;
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(send_[d].data() + i * 4, &ids_[pairs[i]], 4);
      std::memcpy(rows + i * rowBytes, xr_.data() + (pairs[i] / K) * rowBytes, rowBytes);
    }
    spans[d] = {send_[d].data(), send_[d].size()};
    if (d != me) sent += send_[d].size();
  }
  auto t0 = Clock::now();
  mesh_->exchange(comm::FrameKind::kEpDispatch, static_cast<uint32_t>(layer), static_cast<uint32_t>(stage), spans, recv_,
                  nullptr, static_cast<size_t>(maxDispatchBytes_), stop);
  stats_.exchangeUs.fetch_add(usSince(t0), std::memory_order_relaxed);

  // 4. Every pair that reached this rank, in source-rank order (its own from send_).
  std::vector<int64_t> count(F), offset(F + 1, 0);
  uint64_t received = 0;
  for (int s = 0; s < F; ++s) {
    const std::vector<uint8_t>& frame = s == me ? send_[s] : recv_[s];
    AFD_CHECK(frame.size() % (4 + rowBytes) == 0, "expert parallelism: FFN rank " << s << " dispatched " << frame.size()
                                                                              << " bytes, not whole pairs of " << 4 + rowBytes);
    count[s] = static_cast<int64_t>(frame.size() / (4 + rowBytes));
    offset[s + 1] = offset[s] + count[s];
    if (s != me) received += frame.size();
  }
  const int64_t N = offset[F];
  Tensor xAll = hostTensor(xAll_, act, N, H);
  idsAll_.resize(static_cast<size_t>(N));
  const ExpertRange& mine = ffn_.expertRange();
  for (int s = 0; s < F; ++s) {
    const std::vector<uint8_t>& frame = s == me ? send_[s] : recv_[s];
    if (count[s] == 0) continue;
    std::memcpy(idsAll_.data() + offset[s], frame.data(), count[s] * 4);
    std::memcpy(xAll_.data() + offset[s] * rowBytes, frame.data() + count[s] * 4, count[s] * rowBytes);
  }
  for (int64_t i = 0; i < N; ++i) {
    AFD_CHECK(mine.contains(idsAll_[i]), "expert parallelism: FFN rank " << me << " holds experts [" << mine.start << ", "
                                                                         << mine.end << ") but was sent a pair for expert " << idsAll_[i]
                                                                         << "; every FFN rank must use the same placement");
  }
  Tensor yAll = hostTensor(yAll_, act, N, H);
  if (N > 0) runExperts(layer, xAll, idsAll_.data(), yAll);

  // 5. Outputs back to their sources.
  std::vector<size_t> expect(F);
  uint64_t ySent = 0, yReceived = 0;
  for (int d = 0; d < F; ++d) {
    spans[d] = {yAll_.data() + offset[d] * rowBytes, static_cast<size_t>(count[d]) * rowBytes};
    expect[d] = plan.pairsOf[d].size() * rowBytes;
    if (d != me) {
      ySent += spans[d].bytes;
      yReceived += expect[d];
    }
  }
  t0 = Clock::now();
  mesh_->exchange(comm::FrameKind::kEpCombine, static_cast<uint32_t>(layer), static_cast<uint32_t>(stage), spans, yRecv_,
                  &expect, 0, stop);
  stats_.exchangeUs.fetch_add(usSince(t0), std::memory_order_relaxed);
  stats_.dispatchSentBytes[layer].fetch_add(sent, std::memory_order_relaxed);
  stats_.dispatchReceivedBytes[layer].fetch_add(received, std::memory_order_relaxed);
  stats_.combineSentBytes[layer].fetch_add(ySent, std::memory_order_relaxed);
  stats_.combineReceivedBytes[layer].fetch_add(yReceived, std::memory_order_relaxed);

  // 6. Combine: row q = sum over its experts, in expert-id order, of weight * output;
  // then the shared experts (replicated on every rank), then into the output rows.
  Tensor combined = hostTensor(combined_, out.dtype, R, H);
  acc_.resize(static_cast<size_t>(H) * (act == DType::F32 ? 1 : 2));
  float* sum = acc_.data();
  float* row = act == DType::F32 ? nullptr : acc_.data() + H;
  const size_t outRowBytes = static_cast<size_t>(H) * dtypeBytes(out.dtype);
  for (int64_t q = 0; q < R; ++q) {
    std::fill(sum, sum + H, 0.0f);
    for (int64_t j = 0; j < K; ++j) {
      const int32_t pair = plan.combineOrder[q * K + j];
      const int d = plan.ownerOf[pair];
      const uint8_t* y = d == me ? yAll_.data() + (offset[me] + plan.indexAtOwner[pair]) * rowBytes
                                 : yRecv_[d].data() + plan.indexAtOwner[pair] * rowBytes;
      const float* yf = reinterpret_cast<const float*>(y);
      if (row) {
        cpu::convertElems(y, act, 0, H, row);
        yf = row;
      }
      cpu::axpy(weights_[pair], yf, sum, H);
    }
    uint8_t* dst = combined_.data() + q * outRowBytes;
    if (out.dtype == DType::F32) {
      std::memcpy(dst, sum, H * 4);
    } else {
      cpu::storeElems(sum, out.dtype, dst, 0, H);
    }
  }
  addSharedExperts(layer, xr, combined);
  if (out.bytes() > 0) std::memset(out.data, 0, out.bytes());
  for (int64_t q = 0; q < R; ++q) {
    std::memcpy(static_cast<char*>(out.data) + realRows_[q] * outRowBytes, combined_.data() + q * outRowBytes, outRowBytes);
  }
}

}  // namespace afd
