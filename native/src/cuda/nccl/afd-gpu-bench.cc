#include "cuda/nccl/afd-gpu-bench.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <sstream>

#include "comm/comm-error.h"
#include "comm/nccl/blob-exchange.h"
#include "core/error.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/moe-decoder.h"
#include "cuda/nccl/afd-bench-json.h"
#include "cuda/nccl/afd-split-decoder.h"
#include "cuda/nccl/nccl-wire.h"
#include "cuda/peer/peer-wire.h"
#include "cuda/step-graph.h"

namespace afd::cuda {
namespace {

using afd::comm::BlobChannel;
using afd::comm::Deadline;
using Clock = std::chrono::steady_clock;

double usSince(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

struct Wires {
  std::unique_ptr<BlobChannel> channel;
  std::vector<std::unique_ptr<GpuWire>> wires;  // in options.transports order
  int ffnPid = 0;
};

int maxBatchOf(const AfdGpuBenchOptions& o) { return *std::max_element(o.batches.begin(), o.batches.end()); }

std::string summary(const ModelConfig& c, const AfdGpuBenchOptions& o) {
  std::ostringstream s;
  s << c.arch << " L" << c.numLayers << " H" << c.hiddenSize << " E" << c.numExperts << " maxBatch " << maxBatchOf(o)
    << " transports";
  for (auto& t : o.transports) s << " " << t;
  s << " ping " << o.pingBytes.size() << "x" << o.pingIters << " graph " << o.graphRounds << "x" << o.graphReplays
    << " batches";
  for (int b : o.batches) s << " " << b;
  s << " dbo>=" << o.dboMinBatch << " steps " << o.warmupSteps << "+" << o.timedSteps << " fault " << o.faultTest;
  return s.str();
}

Wires bootstrap(const ModelConfig& c, const AfdGpuBenchOptions& o, bool ffn) {
  Wires w;
  const std::string me = summary(c, o);
  if (ffn) {
    w.channel = BlobChannel::accept(o.host, o.port, o.rendezvousTimeoutMs);
    w.channel->sendString("hello", me);
    const int pid = static_cast<int>(::getpid());
    w.channel->send("pid", &pid, sizeof pid);
  } else {
    w.channel = BlobChannel::connect(o.host, o.port, o.rendezvousTimeoutMs);
    const std::string theirs = w.channel->recvString("hello", o.rendezvousTimeoutMs);
    AFD_CHECK(theirs == me, "the FFN side runs another benchmark setup (" << theirs << ") than this one (" << me
                                                                          << "); start both with the same options");
    std::vector<uint8_t> pid = w.channel->recv("pid", o.rendezvousTimeoutMs);
    std::memcpy(&w.ffnPid, pid.data(), sizeof w.ffnPid);
  }
  const size_t H = static_cast<size_t>(c.hiddenSize);
  size_t stageBytes = static_cast<size_t>(maxBatchOf(o)) * H * 4;
  for (int b : o.pingBytes) stageBytes = std::max(stageBytes, static_cast<size_t>(b));
  const std::string peer = ffn ? "attention rank 0 (GPU wire)" : "FFN rank 0 (GPU wire)";
  for (const std::string& t : o.transports) {
    if (t == "nccl") {
      nccl::ncclUniqueId ids[kWireStages];
      if (ffn) {
        for (auto& id : ids) id = nccl::newUniqueId();
        w.channel->send("nccl-id", ids, sizeof ids);
      } else {
        std::vector<uint8_t> b = w.channel->recv("nccl-id", o.rendezvousTimeoutMs);
        AFD_CHECK(b.size() == sizeof ids, "bad NCCL id blob from the FFN side");
        std::memcpy(ids, b.data(), sizeof ids);
      }
      std::vector<std::unique_ptr<nccl::NcclComm>> comms;
      // World order [F, A]: the FFN rank is 0, the attention rank 1; one communicator per DBO stage.
      for (auto& id : ids) comms.push_back(std::make_unique<nccl::NcclComm>(id, 2, ffn ? 0 : 1, peer));
      w.wires.push_back(std::make_unique<NcclWire>(std::move(comms), ffn ? 1 : 0, stageBytes, 256, peer));
    } else if (t == "peer") {
      auto p = std::make_unique<PeerWire>(stageBytes, 256, o.stepDeadlineMs, peer);
      const cudaIpcMemHandle_t mine = p->exportHandle();
      w.channel->send("ipc", &mine, sizeof mine);
      std::vector<uint8_t> b = w.channel->recv("ipc", o.rendezvousTimeoutMs);
      AFD_CHECK(b.size() == sizeof(cudaIpcMemHandle_t), "bad IPC handle blob from the peer");
      cudaIpcMemHandle_t theirs;
      std::memcpy(&theirs, b.data(), sizeof theirs);
      p->connect(theirs);
      w.wires.push_back(std::move(p));
    } else {
      AFD_FAIL("unknown transport \"" << t << "\" (use nccl or peer)");
    }
  }
  return w;
}

// Ping-pong of one wire: the attention side sends and waits for the echo.
void pingPong(GpuWire& wire, const AfdGpuBenchOptions& o, bool ffn, JsonArray* out) {
  const size_t maxBytes = static_cast<size_t>(*std::max_element(o.pingBytes.begin(), o.pingBytes.end()));
  DeviceBuffer src("ping source", maxBytes);
  AFD_CUDA_CHECK(cudaMemset(src.data(), 0x5a, maxBytes));
  cudaStream_t s;
  cudaEvent_t ev;
  AFD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  AFD_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  auto round = [&](int r, size_t bytes) {
    if (ffn) {
      wire.recv(0, r & 1, bytes, s);
      wire.send(0, r & 1, src.data(), bytes, s);
    } else {
      wire.send(0, r & 1, src.data(), bytes, s);
      wire.recv(0, r & 1, bytes, s);
    }
  };
  auto finish = [&] {
    AFD_CUDA_CHECK(cudaEventRecord(ev, s));
    wire.wait(ev, Deadline::afterMs(o.stepDeadlineMs));
  };
  for (int bytes : o.pingBytes) {
    std::vector<double> host, graphed;
    for (int i = 0; i < o.pingIters + 10; ++i) {
      const auto t0 = Clock::now();
      round(i, bytes);
      finish();
      if (i >= 10) host.push_back(usSince(t0));
    }
    const std::unique_ptr<StepGraph> rounds = captureStreamGraph(s, "the round trips", [&] {
      for (int r = 0; r < o.graphRounds; ++r) round(r, bytes);
    });
    for (int i = 0; i < o.graphReplays + 2; ++i) {
      const auto t0 = Clock::now();
      rounds->replay();
      finish();
      if (i >= 2) graphed.push_back(usSince(t0) / o.graphRounds);
    }
    if (!ffn) {
      JsonObject row;
      row.str("transport", wire.name()).num("bytes", bytes).num("hostRoundTripUs", median(host));
      row.num("hostRoundTripP90Us", percentile(host, 0.9)).num("graphRoundTripUs", median(graphed));
      row.num("graphRounds", o.graphRounds);
      out->push(row);
    }
  }
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
}

}  // namespace

// The decode phases (afd-gpu-bench-decode.cc).
std::string runAttentionDecode(const ModelConfig& c, const AfdGpuBenchOptions& o,
                               std::vector<std::unique_ptr<GpuWire>>& wires, afd::comm::BlobChannel& channel,
                               int ffnPid, JsonObject* report, bool* wedged);
std::string runFfnServe(const ModelConfig& c, const AfdGpuBenchOptions& o, std::vector<std::unique_ptr<GpuWire>>& wires,
                        afd::comm::BlobChannel& channel);

std::string runAfdGpuBench(const ModelConfig& c, const AfdGpuBenchOptions& o) {
  AFD_CHECK(o.role == "attention" || o.role == "ffn", "role must be attention or ffn, got \"" << o.role << "\"");
  AFD_CHECK(!o.batches.empty() && !o.pingBytes.empty() && !o.transports.empty(), "batches, pingBytes and transports must not be empty");
  const bool ffn = o.role == "ffn";
  nccl::applyNcclEnv(o.ncclEnv);
  AFD_CUDA_CHECK(cudaSetDevice(o.device));
  const auto t0 = Clock::now();
  Wires w = bootstrap(c, o, ffn);
  JsonArray ping;
  for (auto& wire : w.wires) pingPong(*wire, o, ffn, &ping);
  if (ffn) return runFfnServe(c, o, w.wires, *w.channel);
  JsonObject report;
  cudaDeviceProp prop{};
  AFD_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  report.str("device", prop.name).num("bootstrapAndPingSeconds", usSince(t0) / 1e6);
  report.raw("pingPong", ping.text());
  for (auto& t : o.transports)
    if (t == "nccl") report.num("ncclVersion", nccl::ncclApi().version);
  bool wedged = false;
  std::string text = runAttentionDecode(c, o, w.wires, *w.channel, w.ffnPid, &report, &wedged);
  if (wedged) {
    // The fault case left kernels stuck on the device: leak the wires (their inbox frees
    // would block on the device) so the report still reaches the caller.
    for (auto& wire : w.wires) (void)wire.release();
  }
  return text;
}

}  // namespace afd::cuda
