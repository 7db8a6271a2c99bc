// `afd-bench expert-gemm`: the MoE expert GEMMs of one layer (gate + up with SiLU, then
// down, permuted rows in and out) on random bf16 weights generated on the GPU, our
// grouped tensor-core kernel against cuBLAS grouped GEMM, at several batch sizes.
//
// Variants, each timed with CUDA events around its enqueue from an idle stream (median
// of `iterations` after `warmup`), cycling through `layers` weight copies so the routed
// experts' weights are not served from L2:
//   ours              gemm.cuh linear x2 as MoeDecoder calls them (eager launches)
//   oursGraph         the same two launches replayed as one CUDA graph (the decoder's mode)
//   cublasWithCopy    CublasExpertGemm::run incl. the device->host copy of the expert
//                     offsets and the stream sync it needs (not graph-capturable)
//   cublasCountsKnown the same with the host counts given (the GEMM work alone)
//   cublasCountsKnownGraph  the same captured as a CUDA graph per layer (device time without
//                     host launch gaps; only possible because the counts are fixed here)
//   cublasPerExpert   one cuBLAS call per active expert (counts known)
// The routing (and the permutation, by moePermute) is done once per batch, outside the
// timing: both paths need it. Every cuBLAS variant writes f32 rows like ours (the grouped
// ones through a widening kernel, timed separately as widenMs).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace afd::cuda {

struct ExpertGemmBenchOptions {
  std::vector<int> batches{1, 8, 64, 256, 512};  // tokens
  int numExperts = 128;
  int hidden = 2048;
  int intermediate = 768;  // moe intermediate size
  int topK = 8;
  int layers = 4;  // weight copies cycled through
  int warmup = 5;
  int iterations = 50;
  uint64_t seed = 1;
  // "uniform": top-k of iid N(0, 1) logits (a seeded softmax ranks the same); "skewed":
  // plus a per-expert N(0, 1) popularity bias, so some experts get many more rows.
  std::string routing = "uniform";
  bool perExpert = true;
  int deviceIndex = 0;
  double referenceBandwidthGBs = 4300.0;  // PERFORMANCE.md's floor bandwidth
};

struct ExpertGemmTiming {
  bool ran = false;
  std::string error;       // why it did not run (e.g. the cuBLAS symbol is missing)
  double deviceMs = 0;     // median, CUDA events
  double deviceMsP10 = 0;
  double deviceMsP90 = 0;
  double hostMs = 0;       // median host wall clock, enqueue to event completion
  double achievedGBs = 0;  // bytes / deviceMs
  double ratioToFloor = 0; // floorMs / deviceMs
};

// Output of a cuBLAS variant against ours on the same routed batch (layer 0).
struct ExpertGemmAgreement {
  bool ran = false;
  double relError = 0;  // ||variant - ours|| / ||ours|| (norm-wise)
  double maxError = 0;  // max |variant - ours| / max |ours|
  int64_t unwritten = 0;  // NaN-poisoned output elements the variant never wrote
};

struct ExpertGemmBenchRow {
  int batch = 0;
  int routedRows = 0;          // batch * topK
  int activeExperts = 0;       // experts with at least one row
  double bytes = 0;            // active experts' weights + activation reads/writes
  double floorMs = 0;          // bytes at referenceBandwidthGBs
  ExpertGemmTiming ours, oursGraph, cublasWithCopy, cublasCountsKnown, cublasCountsKnownGraph, cublasPerExpert;
  double widenMs = 0;          // the bf16 -> f32 widening inside the grouped cuBLAS variants
  int64_t oursUnwritten = 0;   // NaN-poisoned elements our path never wrote (must be 0)
  ExpertGemmAgreement cublas;      // cublasWithCopy vs ours
  ExpertGemmAgreement perExpert;   // cublasPerExpert vs ours
};

struct ExpertGemmBenchResult {
  std::string deviceName;
  std::string cublasLibrary;  // soname, "" when cuBLAS did not load
  std::string cublasVersion;
  std::string cublasError;    // why cuBLAS did not load, else ""
  bool groupedGemmAvailable = false;
  bool batchedGemmAvailable = false;
  bool stridedBatchedGemmAvailable = false;
  double setupSeconds = 0;
  std::vector<ExpertGemmBenchRow> rows;
};

ExpertGemmBenchResult runExpertGemmBench(const ExpertGemmBenchOptions& options);

}  // namespace afd::cuda
