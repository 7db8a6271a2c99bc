// Decode phases of the AFD GPU benchmark (see afd-gpu-bench.h): colocated baseline,
// AFD runs per transport / batch / mode with token comparison, the FFN serve loop, and
// the fault test.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <fstream>
#include <memory>
#include <vector>

#include "comm/comm-error.h"
#include "comm/nccl/blob-exchange.h"
#include "core/error.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/moe-decoder.h"
#include "cuda/moe-decoder-inputs.h"
#include "cuda/nccl/afd-bench-json.h"
#include "cuda/nccl/afd-gpu-bench.h"
#include "cuda/nccl/afd-split-decoder.h"
#include "cuda/nccl/nccl-api.h"

namespace afd::cuda {

using afd::comm::BlobChannel;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

DecoderOptions decoderOptions(const AfdGpuBenchOptions& o, bool ffn) {
  DecoderOptions d;
  d.maxBatch = 1;
  for (int b : o.batches) d.maxBatch = std::max(d.maxBatch, b);
  // The FFN side keeps no KV cache worth the name; the attention side holds the context.
  d.maxContext = ffn ? 16 : o.context + o.warmupSteps + o.timedSteps + 16;
  d.blockSize = 16;
  d.kvMemoryFraction = 0.9;
  // AFD_STAGE_EXACT_GEMM=1: DBO stages run their cuBLAS GEMMs at the step's M (DecoderOptions::stageExactGemm).
  const char* exact = std::getenv("AFD_STAGE_EXACT_GEMM");
  d.stageExactGemm = exact != nullptr && std::string(exact) == "1";
  return d;
}

struct RunResult {
  std::vector<std::vector<int32_t>> tokens;  // [steps][rows]
  std::vector<double> stepMs;                // timed steps
};

// Runs warmup + timed steps, feeding each step's tokens back.
template <typename StepFn>
RunResult runSteps(const AfdGpuBenchOptions& o, int rows, int maxBlocks, int64_t vocab, StepFn&& step) {
  SyntheticDecodeBatch in(rows, maxBlocks, 16, vocab);
  RunResult r;
  for (int k = 0; k < o.warmupSteps + o.timedSteps; ++k) {
    in.at(o.context + k);
    const auto t0 = Clock::now();
    std::vector<int32_t> out = step(in.view, k);
    if (k >= o.warmupSteps) r.stepMs.push_back(msSince(t0));
    in.setTokens(out);
    r.tokens.push_back(std::move(out));
  }
  return r;
}

// The report so far plus the fault result, for when the teardown of a wedged device hangs.
void writePartial(const AfdGpuBenchOptions& o, const JsonObject& report, const JsonObject& fault) {
  if (o.partialReportPath.empty()) return;
  std::string text = report.text();
  text.pop_back();  // the closing brace
  std::ofstream f(o.partialReportPath);
  f << text << ",\"fault\":" << fault.text() << "}\n";
}

// Runs `onExpire` and ends the process (exit code 3) unless disarmed within budgetMs:
// the last resort of the fault case, whose calls into a wedged device may block.
class FaultWatchdog {
 public:
  FaultWatchdog(int budgetMs, std::function<void()> onExpire)
      : thread_([this, budgetMs, onExpire] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::milliseconds(budgetMs), [this] { return disarmed_; })) {
            onExpire();
            std::fprintf(stderr, "afd-gpu fault case: watchdog expired after %d ms; exiting (report in the partial file)\n",
                         budgetMs);
            std::_Exit(3);
          }
        }) {}
  ~FaultWatchdog() { disarm(); }
  void disarm() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      disarmed_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;  // declared last: starts after the members it uses
};

// Steps (of all) whose tokens differ from the baseline.
int mismatchedSteps(const RunResult& a, const RunResult& b) {
  int bad = 0;
  for (size_t k = 0; k < a.tokens.size() && k < b.tokens.size(); ++k) bad += a.tokens[k] != b.tokens[k];
  return bad;
}

}  // namespace

std::string runAttentionDecode(const ModelConfig& c, const AfdGpuBenchOptions& o,
                               std::vector<std::unique_ptr<GpuWire>>& wires, BlobChannel& channel, int ffnPid,
                               JsonObject* report, bool* wedged) {
  // Heap-held so a wedged device (a step's kernels still stuck after the NCCL abort) can
  // be left behind un-destroyed: their destructors synchronize and would hang the process.
  auto backendOwner = std::make_unique<CudaBackend>(o.device);
  CudaBackend& backend = *backendOwner;
  const DecoderOptions dopt = decoderOptions(o, false);
  report->flag("stageExactGemm", dopt.stageExactGemm);
  // ---- colocated baseline on this GPU
  std::vector<RunResult> base;
  JsonArray colocated;
  {
    MoeDecoder dec(backend, c, dopt);
    dec.initSynthetic(o.seed);
    dec.fillKvRandom(o.seed + 1);
    for (size_t bi = 0; bi < o.batches.size(); ++bi) {
      const int b = o.batches[bi];
      RunResult r = runSteps(o, b, dec.maxBlocksPerSeq(), c.vocabSize,
                             [&](const DecodeInput& in, int) { return dec.step(in); });
      JsonObject row;
      row.num("batch", b).flag("graph", true).num("msPerStep", median(r.stepMs)).num("msPerStepP90", percentile(r.stepMs, 0.9));
      row.num("tokensPerSecond", b * 1000.0 / median(r.stepMs));
      colocated.push(row);
      base.push_back(std::move(r));
    }
  }
  report->raw("colocated", colocated.text());

  // ---- AFD runs (one decoder for all transports; the FFN side holds the experts)
  auto decOwner = std::make_unique<MoeDecoder>(backend, c, dopt);
  MoeDecoder& dec = *decOwner;
  dec.initSynthetic(o.seed);
  dec.fillKvRandom(o.seed + 1);
  JsonArray afd;
  for (auto& wire : wires) {
    // Pass 1: router on the FFN side, every mode; pass 2: router on the attention side
    // (logits cross the wire), graph modes only.
    for (const bool gateOnAttention : {false, true}) {
      AfdAttentionSide side(dec, backend.stream(), dopt.maxBatch, *wire, o.stepDeadlineMs, gateOnAttention);
      for (size_t bi = 0; bi < o.batches.size(); ++bi) {
        const int b = o.batches[bi];
        struct Mode {
          bool graph, dbo;
        };
        std::vector<Mode> modes{{true, false}};
        if (!gateOnAttention) modes.push_back({false, false});
        if (b >= o.dboMinBatch && b >= 2) {
          modes.push_back({true, true});
          if (!gateOnAttention) modes.push_back({false, true});
        }
        for (const Mode& m : modes) {
          RunResult r = runSteps(o, b, dec.maxBlocksPerSeq(), c.vocabSize, [&](const DecodeInput& in, int k) {
            return side.step(in, m.dbo, m.graph, k == o.warmupSteps);
          });
          JsonObject row;
          const double ms = median(r.stepMs);
          row.str("transport", wire->name()).str("gate", gateOnAttention ? "attention" : "ffn").num("batch", b);
          row.flag("graph", m.graph).flag("dbo", m.dbo);
          row.num("msPerStep", ms).num("msPerStepP90", percentile(r.stepMs, 0.9));
          row.num("tokensPerSecond", b * 1000.0 / ms).num("tokensPerSecondPerGpu", b * 1000.0 / ms / 2);
          row.num("colocatedMsPerStep", median(base[bi].stepMs)).num("ratioToColocated", ms / median(base[bi].stepMs));
          row.num("steps", static_cast<double>(r.tokens.size())).num("mismatchedSteps", mismatchedSteps(r, base[bi]));
          if (!m.graph) {
            // Sampled eager step: per layer, stage 0 send start -> FFN output back, microseconds.
            std::vector<double> us(side.sampledLayerUs().begin(), side.sampledLayerUs().end());
            row.num("layerRoundTripUsMedian", median(us)).num("layerRoundTripUsMax", percentile(us, 1.0));
          }
          afd.push(row);
        }
      }
      const SplitCounters& k = side.counters();
      JsonObject counters;
      counters.str("transport", wire->name()).str("gate", gateOnAttention ? "attention" : "ffn");
      counters.num("steps", k.steps).num("graphHits", k.graphHits);
      counters.num("graphMisses", k.graphMisses).num("graphCaptures", k.graphCaptures);
      side.shutdown();
      counters.raw("ffn", channel.recvString("stats", o.rendezvousTimeoutMs));
      afd.push(counters);
    }
  }
  report->raw("afd", afd.text());
  if (!o.partialReportPath.empty()) {
    std::ofstream f(o.partialReportPath);
    f << report->text() << "\n";
  }

  // ---- fault: kill the FFN process; the next step must fail within the deadline
  if (o.faultTest && ffnPid > 0) {
    // Watchdog: whatever blocks, the fault case ends within its budget with a report.
    const int budgetMs = o.stepDeadlineMs + 2000 + 3000 + 15000;
    FaultWatchdog watchdog(budgetMs, [&o, report] {
      JsonObject f;
      f.flag("failed", false).flag("timedOut", true).str("error", "fault case did not finish within its watchdog budget");
      writePartial(o, *report, f);
    });
    GpuWire& wire = *wires.front();
    // The FFN process's end of the TCP side channel closes when it dies: a watcher turns
    // that into the wire's peer-lost flag, so the stuck wait aborts now, not at the deadline.
    std::atomic<bool> peerLost{false}, watching{true};
    std::thread watcher([&] {
      while (watching.load() && !peerLost.load()) {
        if (channel.peerClosed()) peerLost.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    struct JoinOnExit {
      std::atomic<bool>& flag;
      std::thread& t;
      ~JoinOnExit() {
        flag.store(false);
        if (t.joinable()) t.join();
      }
    } joinWatcher{watching, watcher};
    wire.setPeerLostFlag(&peerLost);
    AfdAttentionSide side(dec, backend.stream(), dopt.maxBatch, wire, o.stepDeadlineMs);
    SyntheticDecodeBatch in(1, dec.maxBlocksPerSeq(), 16, c.vocabSize);
    in.at(o.context);
    side.step(in.view, false, true, false);  // the FFN side serves this one
    ::kill(ffnPid, SIGKILL);
    JsonObject fault;
    fault.str("transport", wire.name()).num("stepDeadlineMs", o.stepDeadlineMs);
    const auto t0 = Clock::now();
    std::string error;
    try {
      for (int i = 0; i < 50; ++i) side.step(in.view, false, true, false);
    } catch (const std::exception& e) {
      error = e.what();
    }
    const double detectionMs = msSince(t0);
    fault.num("failedAfterMs", detectionMs).num("detectionMs", detectionMs).str("error", error).flag("failed", !error.empty());
    fault.flag("withinDeadline", !error.empty() && detectionMs <= o.stepDeadlineMs + 3000.0);
    writePartial(o, *report, fault);
    // The aborted step's kernels must return (NCCL abort) before the GPU is usable again.
    bool drained = false;
    for (int i = 0; i < 3000 && !drained; ++i) {
      drained = cudaStreamQuery(backend.stream()) != cudaErrorNotReady;
      if (!drained) usleep(1000);
    }
    fault.flag("streamDrainedAfterAbort", drained);
    // Still alive: a colocated step on the same GPU and decoder gives the baseline's token.
    bool alive = false;
    std::string aliveError = drained ? "" : "the aborted step's kernels did not return within 3 s";
    if (drained) {
      try {
        cudaGetLastError();
        std::vector<int32_t> t = dec.step(in.view);
        alive = true;  // the process and the GPU still serve a step
        if (!base.empty() && o.batches[0] == 1) fault.flag("tokenMatchesBaseline", t == base[0].tokens[0]);
      } catch (const std::exception& e) {
        aliveError = e.what();
      }
    }
    fault.flag("aliveAfterFault", alive).flag("attentionAlive", alive).str("aliveError", aliveError);
    fault.flag("timedOut", false).flag("leftWedgedDeviceBehind", !drained);
    writePartial(o, *report, fault);
    report->raw("fault", fault.text());
    watchdog.disarm();
    if (!drained) {
      // Never destroy objects of a wedged device (their destructors synchronize forever).
      *wedged = true;
      (void)decOwner.release();
      (void)backendOwner.release();
    }
  }
  return report->text();
}

std::string runFfnServe(const ModelConfig& c, const AfdGpuBenchOptions& o, std::vector<std::unique_ptr<GpuWire>>& wires,
                        BlobChannel& channel) {
  CudaBackend backend(o.device);
  const DecoderOptions dopt = decoderOptions(o, true);
  MoeDecoder dec(backend, c, dopt);
  dec.initSynthetic(o.seed);
  JsonArray served;
  for (auto& wire : wires) {
    for (const bool gateOnAttention : {false, true}) {
      AfdFfnSide side(dec, backend.stream(), dopt.maxBatch, *wire, o.stepDeadlineMs, gateOnAttention);
      while (side.serveStep(nullptr)) {
      }
      const SplitCounters& k = side.counters();
      std::vector<double> us(side.sampledLayerUs().begin(), side.sampledLayerUs().end());
      JsonObject s;
      s.str("transport", wire->name()).str("gate", gateOnAttention ? "attention" : "ffn");
      s.num("stepsServed", k.steps).num("graphHits", k.graphHits);
      s.num("graphMisses", k.graphMisses).num("graphCaptures", k.graphCaptures);
      s.num("ffnComputeUsPerLayerMedian", median(us));
      channel.sendString("stats", s.text());
      served.push(s);
    }
  }
  if (o.faultTest) {
    // Serve until killed by the attention side's fault test.
    AfdFfnSide side(dec, backend.stream(), dopt.maxBatch, *wires.front(), o.stepDeadlineMs);
    while (side.serveStep(nullptr)) {
    }
  }
  return served.text();
}

}  // namespace afd::cuda
