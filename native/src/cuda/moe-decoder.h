// The fused decode path of a Qwen3-MoE model on one GPU: bf16 weights in one device
// arena, paged bf16 KV cache, every op of the step enqueued on one stream with no host
// sync until the sampled token ids come back, so a whole decode step is captured as one
// CUDA graph per batch-size bucket (replayed when the padded batch matches, eager
// otherwise). Weights come from a synthetic generator on the device (full-size shapes
// without a checkpoint on disk) or from host memory tensor by tensor.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/device-buffer.h"
#include "cuda/gemm.cuh"
#include "cuda/step-graph.h"
#include "model/model-config.h"

namespace afd::cuda {

class CudaBackend;

struct DecoderOptions {
  int maxBatch = 256;          // rows per step
  int maxContext = 2048;       // positions per sequence
  int blockSize = 16;          // KV tokens per block
  double kvMemoryFraction = 0.9;  // cap of the KV pool: this fraction of free memory after weights
  bool useGraphs = true;
  // Split stages (AFD / DBO): run cuBLAS GEMMs of a stage at M = the step's shape rows on
  // padded copies, so cuBLAS picks the same kernel as the unsplit step (its pick may
  // depend on M). Off: cuBLAS runs at the stage's rows (cheaper; rows may round
  // differently). Off by default: on the H200 (cuBLAS 13.1) the GPU suite's split-stage
  // check found the stage's M bit-equal to the step's M at 32/64 and 128/256 rows, so the
  // staging copies buy nothing there. Env AFD_STAGE_EXACT_GEMM=1 turns it on in the benches.
  bool stageExactGemm = false;
};

// One decode row per sequence. Host arrays, `rows` entries (block tables: rows x maxBlocksPerSeq).
struct DecodeInput {
  int rows = 0;
  const int32_t* tokenIds = nullptr;
  const int32_t* positions = nullptr;    // position of the token being decoded
  const int32_t* slotMapping = nullptr;  // KV slot of that position
  const int32_t* blockTables = nullptr;  // [rows, maxBlocksPerSeq()]
  const float* temperature = nullptr;
  const int32_t* topK = nullptr;
  const float* topP = nullptr;
  const uint32_t* seeds = nullptr;
};

struct DecoderCounters {
  uint64_t graphHits = 0;
  uint64_t graphMisses = 0;
  uint64_t graphCaptures = 0;
  uint64_t steps = 0;
};

class MoeDecoder {
 public:
  MoeDecoder(CudaBackend& backend, const ModelConfig& config, const DecoderOptions& options);
  ~MoeDecoder();
  MoeDecoder(const MoeDecoder&) = delete;
  MoeDecoder& operator=(const MoeDecoder&) = delete;

  // Random weights generated on the device (uniform, std 0.02 for matrices, 1 +- 0.1 for norms).
  void initSynthetic(uint64_t seed);
  // Copies the checkpoint tensors of a colocated load spec into the arena (bf16; f32 and
  // f16 tensors are rounded). Every weight of the model must be in the spec.
  void loadWeights(const ModelLoadSpec& spec);
  // Fills the whole KV pool with random values (benchmarks at a context without prefill).
  void fillKvRandom(uint64_t seed);

  // One decode step; returns the sampled token of each row (host).
  std::vector<int32_t> step(const DecodeInput& input);
  // Enqueues the step's device work only (no upload, no download): for timing.
  void enqueueStep(int paddedRows);
  // Uploads inputs for `rows` rows padded to `paddedRows`.
  void upload(const DecodeInput& input, int paddedRows);
  // Device work of one step via its graph (capturing on first use) or eagerly.
  void launch(int paddedRows, bool graph);
  // Waits for the step and returns the first `rows` sampled tokens.
  std::vector<int32_t> downloadTokens(int rows);
  // Logits of the last step, [rows, vocab] f32.
  std::vector<float> downloadLogits(int rows);

  // ---- AFD split hooks (used by cuda/nccl/afd-split-decoder): enqueueStep cut at the
  // attention / FFN seam. A DBO stage is the row range [rowBegin, rowBegin + rows).
  // shapeRows (0 = rows): the rows of the whole step the stage belongs to. Every
  // row-count-dependent choice (small-row kernel vs cuBLAS, cuBLAS's M with
  // stageExactGemm, the fused router, the attention split count and kernel family, the
  // expert grid) is
  // made for shapeRows, so each row of a stage is computed bit for bit as in the
  // unsplit step of shapeRows rows. shapeRows >= rows; <= maxBatch.
  // embedding + layer 0 input norm -> xNorm, rows [0, rows).
  void enqueueEmbed(int rows);
  // residual += o_proj(attention(input-normed rows)); xNorm = postNorm(residual) (bf16).
  void enqueueAttentionHalf(int layer, int rowBegin, int rows, int shapeRows = 0);
  // xIn: bf16 [rows, H] -> out: f32 [rows, H] = sum_k w_k * expert_k(xIn) (router on this side).
  // withResidualNorm: out += ... and normOut = RMSNorm(out) with the next layer's input
  // norm (the colocated combine); otherwise out = ... only.
  // routerLogits: f32 [rows, E] computed on the attention side (gate on attention), or
  // null to run the router here.
  void enqueueFfnHalf(int layer, const void* xIn, int rows, float* out, bool withResidualNorm, void* normOut,
                      const float* routerLogits = nullptr, int shapeRows = 0);
  // Router (gate) of a layer on xIn bf16 [rows, H] -> logits f32 [rows, E] (gate on attention).
  void enqueueRouter(int layer, const void* xIn, int rows, float* logits, int shapeRows = 0);
  // final norm was applied by the last combine; LM head + sampling over rows [0, rows).
  void enqueueHead(int rows);
  // Device rows of the step buffers: xNorm bf16 [B, H], residual f32 [B, H].
  void* xNormRows(int rowBegin) const;
  float* residualRows(int rowBegin) const;
  // Input norm weight of layer + 1 (the final norm after the last layer), bf16 [H].
  const void* nextNormWeight(int layer) const;

  int paddedBatch(int rows) const;  // the graph bucket a batch runs as; 0 when none fits (eager)
  int maxBlocksPerSeq() const { return maxBlocksPerSeq_; }
  int numKvBlocks() const { return numKvBlocks_; }
  uint64_t weightBytes() const { return weights_.bytes(); }
  uint64_t kvBytes() const { return kv_.bytes(); }
  // Kernel (and memset) nodes of the captured step of this bucket; 0 if none captured.
  size_t graphNodes(int paddedRows);
  // Active experts per layer in the last step (device counts copied back).
  std::vector<int32_t> activeExpertsPerLayer();
  const DecoderCounters& counters() const { return counters_; }
  const ModelConfig& config() const { return config_; }

  // Named weight access for loading real checkpoints: [rows, cols] bf16 on the device.
  struct WeightRef {
    void* data;
    size_t elements;
  };
  WeightRef weight(const std::string& hfName);

 private:
  struct Layer;
  struct Buffers;
  void allocate();
  void enqueueLayer(int layer, int rows);
  // Dense bf16-weight linear whose path is chosen for shapeRows (see the split hooks).
  void denseLinear(const LinearArgs& args, int shapeRows);
  int checkShapeRows(int rows, int shapeRows) const;

  CudaBackend& backend_;
  ModelConfig config_;
  DecoderOptions options_;
  cudaStream_t stream_;
  DeviceBuffer weights_;
  DeviceBuffer kv_;
  DeviceBuffer activations_;
  DeviceBuffer splitCounters_;
  DeviceBuffer stageGemm_;  // stageExactGemm staging: x bf16 [B, maxK] then out f32 [B, maxN]
  size_t stageGemmXBytes_ = 0;
  size_t attentionWorkspaceBytes_ = 0;
  DeviceBuffer routerCounter_;  // done counter of the fused router + route kernel
  DeviceBuffer invFreqBuffer_;
  std::vector<Layer> layers_;
  std::unique_ptr<Buffers> buf_;
  std::map<std::string, WeightRef> named_;
  std::vector<float> invFreqHost_;
  int maxBlocksPerSeq_ = 0;
  int numKvBlocks_ = 0;
  std::map<int, std::unique_ptr<StepGraph>> graphs_;
  DecoderCounters counters_;
};

}  // namespace afd::cuda
