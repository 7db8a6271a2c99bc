#include "cuda/expert-gemm-bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>

#include "cuda/cuda-backend.h"
#include "cuda/bench-stats.h"
#include "cuda/cuda-check.h"
#include "cuda/device-buffer.h"
#include "cuda/expert-gemm-cublas.h"
#include "cuda/gemm.cuh"
#include "cuda/moe.cuh"
#include "cuda/random-fill.cuh"
#include "cuda/step-graph.h"

namespace afd::cuda {
namespace {

using Clock = std::chrono::steady_clock;

// topkIds [tokens, topK]: the topK largest of N(0, 1) logits (+ a per-expert bias when skewed).
std::vector<int32_t> drawRouting(const ExpertGemmBenchOptions& o, int tokens) {
  std::mt19937_64 rng(o.seed * 1000003ull + static_cast<uint64_t>(tokens));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> bias(o.numExperts, 0.0f);
  if (o.routing == "skewed") {
    std::mt19937_64 biasRng(o.seed);
    for (float& b : bias) b = std::normal_distribution<float>(0.0f, 1.0f)(biasRng);
  }
  std::vector<int32_t> ids(static_cast<size_t>(tokens) * o.topK);
  std::vector<float> logits(o.numExperts);
  std::vector<int32_t> order(o.numExperts);
  for (int t = 0; t < tokens; ++t) {
    for (int e = 0; e < o.numExperts; ++e) logits[e] = normal(rng) + bias[e];
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + o.topK, order.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    std::copy(order.begin(), order.begin() + o.topK, ids.begin() + static_cast<size_t>(t) * o.topK);
  }
  return ids;
}

// Per-layer weights in one allocation each: gate then up ([E, I, H] each), down [E, H, I].
struct Weights {
  DeviceBuffer gateUp, down;
  size_t perExpert = 0;  // I * H elements
  int experts = 0;
  ExpertWeightsView layer(int l) const {
    ExpertWeightsView v;
    const size_t block = perExpert * experts;
    v.gate = gateUp.as<uint16_t>() + 2 * block * l;
    v.up = gateUp.as<uint16_t>() + 2 * block * l + block;
    v.down = down.as<uint16_t>() + block * l;
    v.expertStride = static_cast<int64_t>(perExpert);
    return v;
  }
};

class Timer {
 public:
  Timer(cudaStream_t stream, const ExpertGemmBenchOptions& o) : stream_(stream), o_(o) {
    AFD_CUDA_CHECK(cudaEventCreate(&a_));
    AFD_CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~Timer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  // Runs enqueue(layer) warmup + iterations times from an idle stream; errors become `error`.
  ExpertGemmTiming time(const std::function<void(int)>& enqueue, double bytes, double floorMs) {
    ExpertGemmTiming t;
    std::vector<double> device, host;
    try {
      for (int i = 0; i < o_.warmup + o_.iterations; ++i) {
        const auto t0 = Clock::now();
        AFD_CUDA_CHECK(cudaEventRecord(a_, stream_));
        enqueue(i % o_.layers);
        AFD_CUDA_CHECK(cudaEventRecord(b_, stream_));
        AFD_CUDA_CHECK(cudaEventSynchronize(b_));
        float ms = 0;
        AFD_CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
        if (i < o_.warmup) continue;
        device.push_back(ms);
        host.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    } catch (const std::exception& e) {
      t.error = e.what();
      AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return t;
    }
    t.ran = true;
    t.deviceMs = percentile(device, 0.5);
    t.deviceMsP10 = percentile(device, 0.1);
    t.deviceMsP90 = percentile(device, 0.9);
    t.hostMs = percentile(host, 0.5);
    t.achievedGBs = bytes / (t.deviceMs * 1e-3) / 1e9;
    t.ratioToFloor = floorMs / t.deviceMs;
    return t;
  }

 private:
  cudaStream_t stream_;
  const ExpertGemmBenchOptions& o_;
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

// After the stream's work (a plain cudaMemcpy would not wait for a non-blocking stream).
std::vector<float> download(const float* dev, size_t count, cudaStream_t stream) {
  std::vector<float> host(count);
  AFD_CUDA_CHECK(cudaMemcpyAsync(host.data(), dev, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

int64_t countNaN(const std::vector<float>& v) {
  return std::count_if(v.begin(), v.end(), [](float x) { return std::isnan(x); });
}

ExpertGemmAgreement agreement(const std::vector<float>& ours, const std::vector<float>& other) {
  ExpertGemmAgreement a;
  a.ran = true;
  a.unwritten = countNaN(other);
  double diff2 = 0, ref2 = 0, maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const double d = static_cast<double>(other[i]) - ours[i];
    diff2 += d * d;
    ref2 += static_cast<double>(ours[i]) * ours[i];
    maxDiff = std::max(maxDiff, std::fabs(d));
    maxRef = std::max(maxRef, std::fabs(static_cast<double>(ours[i])));
  }
  a.relError = std::sqrt(diff2) / std::max(std::sqrt(ref2), 1e-30);
  a.maxError = (a.unwritten > 0 ? NAN : maxDiff) / std::max(maxRef, 1e-30);
  return a;
}

// Captures enqueue(l) as one CUDA graph per layer and times their replays. A capture that
// fails (e.g. a library call that cannot be captured) ends the capture and becomes `error`.
ExpertGemmTiming timeGraphs(Timer& timer, cudaStream_t stream, int layers, const std::function<void(int)>& enqueue,
                            double bytes, double floorMs) {
  std::vector<std::unique_ptr<StepGraph>> graphs;
  ExpertGemmTiming t;
  try {
    for (int l = 0; l < layers; ++l) graphs.push_back(captureStreamGraph(stream, "one layer's expert GEMMs", [&] { enqueue(l); }));
    t = timer.time([&](int l) { graphs[l]->replay(); }, bytes, floorMs);
  } catch (const std::exception& e) {
    t.error = std::string("graph capture: ") + e.what();
  }
  return t;
}

void validate(const ExpertGemmBenchOptions& o) {
  if (o.batches.empty()) throw std::invalid_argument("expert-gemm bench: no batch sizes given");
  for (int b : o.batches)
    if (b <= 0) throw std::invalid_argument("expert-gemm bench: batch sizes must be positive");
  if (o.numExperts <= 0 || o.topK <= 0 || o.topK > o.numExperts || o.hidden % 8 != 0 || o.intermediate % 8 != 0 ||
      o.hidden <= 0 || o.intermediate <= 0) {
    throw std::invalid_argument("expert-gemm bench: need 0 < topK <= experts and hidden, intermediate positive multiples of 8");
  }
  if (o.layers <= 0 || o.iterations <= 0 || o.warmup < 0) {
    throw std::invalid_argument("expert-gemm bench: layers and iterations must be positive, warmup >= 0");
  }
  if (o.routing != "uniform" && o.routing != "skewed") {
    throw std::invalid_argument("expert-gemm bench: routing must be uniform or skewed (got \"" + o.routing + "\")");
  }
}

}  // namespace

ExpertGemmBenchResult runExpertGemmBench(const ExpertGemmBenchOptions& o) {
  validate(o);
  const auto setupStart = Clock::now();
  CudaBackend backend(o.deviceIndex);
  const cudaStream_t stream = backend.stream();
  ExpertGemmBenchResult result;
  cudaDeviceProp prop{};
  AFD_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.deviceIndex));
  result.deviceName = prop.name;
  if (backend.cublas() != nullptr) {
    const CublasInfo info = cublasInfo();
    result.cublasLibrary = info.soname;
    result.cublasVersion = info.version;
    result.groupedGemmAvailable = info.groupedBatchedEx;
    result.batchedGemmAvailable = info.batchedEx;
    result.stridedBatchedGemmAvailable = info.stridedBatchedEx;
  } else {
    result.cublasError = backend.cublasError();
  }

  const int E = o.numExperts, H = o.hidden, I = o.intermediate, K = o.topK, L = o.layers;
  const int maxRows = *std::max_element(o.batches.begin(), o.batches.end()) * K;
  const size_t block = static_cast<size_t>(E) * I * H;  // elements of one layer's gate (or up, or down)
  Weights w;
  w.perExpert = static_cast<size_t>(I) * H;
  w.experts = E;
  w.gateUp = DeviceBuffer("expert gate+up weights (" + std::to_string(L) + " layers)", 2 * block * L * 2);
  w.down = DeviceBuffer("expert down weights (" + std::to_string(L) + " layers)", block * L * 2);
  fillRandom(w.gateUp.data(), 2, 2 * block * L, o.seed, 0.05f, 0.0f, stream);
  fillRandom(w.down.data(), 2, block * L, o.seed + 1, 0.05f, 0.0f, stream);
  const size_t maxTokens = static_cast<size_t>(maxRows / K);
  DeviceBuffer x("expert GEMM input rows", maxTokens * H * 2);
  fillRandom(x.data(), 2, maxTokens * H, o.seed + 2, 1.0f, 0.0f, stream);
  DeviceBuffer ids("routed expert ids", sizeof(int32_t) * maxRows);
  DeviceBuffer permBuf("expert permutation", sizeof(int32_t) * (E + 1 + E + 2 * maxRows));
  MoePermutation perm;
  perm.expertOffsets = permBuf.as<int32_t>();
  perm.activeExperts = perm.expertOffsets + E + 1;
  perm.sortedSourceRow = perm.activeExperts + E;
  perm.pairPosition = perm.sortedSourceRow + maxRows;
  DeviceBuffer actOurs("expert activations (ours)", static_cast<size_t>(maxRows) * I * 2);
  DeviceBuffer outOurs("expert output rows (ours)", static_cast<size_t>(maxRows) * H * 4);
  DeviceBuffer outOther("expert output rows (cuBLAS)", static_cast<size_t>(maxRows) * H * 4);
  DeviceBuffer widenIn("widening probe input", static_cast<size_t>(maxRows) * H * 2);
  AFD_CUDA_CHECK(cudaMemsetAsync(widenIn.data(), 0, widenIn.bytes(), stream));
  std::unique_ptr<CublasExpertGemm> cublasPath;
  if (backend.cublas() != nullptr) {
    cublasPath = std::make_unique<CublasExpertGemm>(*backend.cublas());
    cublasPath->reserve(maxRows, E, H, I, true);
  }
  AFD_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.setupSeconds = std::chrono::duration<double>(Clock::now() - setupStart).count();

  Timer timer(stream, o);
  for (int tokens : o.batches) {
    const int rows = tokens * K;
    const int slots = moeGridSlots(tokens, E, K);
    const std::vector<int32_t> routing = drawRouting(o, tokens);
    AFD_CUDA_CHECK(cudaMemcpyAsync(ids.data(), routing.data(), sizeof(int32_t) * rows, cudaMemcpyHostToDevice, stream));
    moePermute(ids.as<int32_t>(), tokens, E, K, slots, perm, stream);
    std::vector<int32_t> offsets(E + 1);
    AFD_CUDA_CHECK(cudaMemcpyAsync(offsets.data(), perm.expertOffsets, sizeof(int32_t) * (E + 1), cudaMemcpyDeviceToHost, stream));
    AFD_CUDA_CHECK(cudaStreamSynchronize(stream));

    ExpertGemmBenchRow row;
    row.batch = tokens;
    row.routedRows = rows;
    for (int e = 0; e < E; ++e) row.activeExperts += offsets[e + 1] > offsets[e] ? 1 : 0;
    row.bytes = row.activeExperts * 3.0 * I * H * 2 + static_cast<double>(tokens) * H * 2 + 2.0 * rows * I * 2 +
                static_cast<double>(rows) * H * 4;
    row.floorMs = row.bytes / (o.referenceBandwidthGBs * 1e9) * 1e3;

    // Ours, exactly as MoeDecoder::enqueueFfnHalf calls it.
    auto enqueueOurs = [&](int l) {
      const ExpertWeightsView v = w.layer(l);
      LinearArgs gu;
      gu.x = x.data();
      gu.xRowIndex = perm.sortedSourceRow;
      gu.w = v.gate;
      gu.wUp = v.up;
      gu.groupStride = v.expertStride;
      gu.groupOffsets = perm.expertOffsets;
      gu.activeGroups = perm.activeExperts;
      gu.rows = rows;
      gu.n = I;
      gu.k = H;
      gu.out = actOurs.data();
      gu.ldOut = I;
      gu.epilogue = Epilogue::SiluMulBf16;
      gatedMlp(gu, DownWeights{v.down}, outOurs.data(), slots, nullptr, stream);
    };
    row.ours = timer.time(enqueueOurs, row.bytes, row.floorMs);
    row.oursGraph = timeGraphs(timer, stream, L, enqueueOurs, row.bytes, row.floorMs);

    CublasExpertGemmArgs args;
    args.x = x.data();
    args.sortedSourceRow = perm.sortedSourceRow;
    args.expertOffsets = perm.expertOffsets;
    args.activeExperts = perm.activeExperts;
    args.numExperts = E;
    args.rows = rows;
    args.hidden = H;
    args.inter = I;
    args.out = outOther.data();
    args.outIsF32 = true;
    auto cublasVariant = [&](bool countsKnown, bool perExpert) {
      return [&, countsKnown, perExpert](int l) {
        if (!cublasPath) throw std::runtime_error("cuBLAS did not load: " + result.cublasError);
        CublasExpertGemmArgs a = args;
        a.weights = w.layer(l);
        a.hostExpertOffsets = countsKnown ? offsets.data() : nullptr;
        if (perExpert) {
          cublasPath->runPerExpert(a, stream);
        } else {
          cublasPath->run(a, stream);
        }
      };
    };
    row.cublasWithCopy = timer.time(cublasVariant(false, false), row.bytes, row.floorMs);
    row.cublasCountsKnown = timer.time(cublasVariant(true, false), row.bytes, row.floorMs);
    row.cublasCountsKnownGraph = row.cublasCountsKnown.ran
                                     ? timeGraphs(timer, stream, L, cublasVariant(true, false), row.bytes, row.floorMs)
                                     : ExpertGemmTiming{false, "cuBLAS grouped GEMM did not run"};
    if (o.perExpert) {
      row.cublasPerExpert = timer.time(cublasVariant(true, true), row.bytes, row.floorMs);
    } else {
      row.cublasPerExpert.error = "not requested";
    }
    const size_t outCount = static_cast<size_t>(rows) * H;
    row.widenMs = timer.time([&](int) { widenBf16ToF32(widenIn.data(), outCount, outOther.as<float>(), stream); }, 1, 1).deviceMs;

    // Agreement on layer 0, outputs poisoned with NaN first.
    AFD_CUDA_CHECK(cudaMemsetAsync(outOurs.data(), 0xff, outCount * 4, stream));
    enqueueOurs(0);
    const std::vector<float> ours = download(outOurs.as<float>(), outCount, stream);
    row.oursUnwritten = countNaN(ours);
    auto compare = [&](const ExpertGemmTiming& timing, bool perExpert, ExpertGemmAgreement& into) {
      if (!timing.ran) return;
      AFD_CUDA_CHECK(cudaMemsetAsync(outOther.data(), 0xff, outCount * 4, stream));
      cublasVariant(false, perExpert)(0);
      into = agreement(ours, download(outOther.as<float>(), outCount, stream));
    };
    compare(row.cublasWithCopy, false, row.cublas);
    compare(row.cublasPerExpert, true, row.perExpert);
    result.rows.push_back(row);
  }
  return result;
}

}  // namespace afd::cuda
