#include "cuda/decoder-check.h"

#include <cmath>
#include <stdexcept>

#include "core/error.h"
#include "cuda/cuda-check.h"
#include "cuda/device-buffer.h"
#include "cuda/moe.cuh"

#include "cuda/cuda-backend.h"
#include "cuda/moe-decoder.h"
#include "cuda/moe-decoder-inputs.h"

namespace afd::cuda {

DecoderRun runDecoderGreedy(const ModelLoadSpec& spec, const std::vector<int32_t>& prompt, int maxNewTokens,
                            bool useGraphs, int deviceIndex) {
  if (prompt.empty() || maxNewTokens <= 0) throw std::invalid_argument("runDecoderGreedy: need a prompt and maxNewTokens > 0");
  CudaBackend backend(deviceIndex);
  DecoderOptions opt;
  opt.maxBatch = 1;
  opt.maxContext = static_cast<int>(prompt.size()) + maxNewTokens + 16;
  opt.useGraphs = useGraphs;
  MoeDecoder decoder(backend, spec.config, opt);
  decoder.loadWeights(spec);
  std::vector<int32_t> table(decoder.maxBlocksPerSeq());
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(table.size() - 1 - i);  // scattered
  const float temperature = 0.0f, topP = 1.0f;
  const int32_t topK = 0;
  const uint32_t seed = 0;
  DecoderRun run;
  int32_t token = prompt[0];
  const int total = static_cast<int>(prompt.size()) + maxNewTokens - 1;
  for (int pos = 0; pos < total; ++pos) {
    const int32_t slot = table[pos / 16] * 16 + pos % 16;
    DecodeInput in;
    in.rows = 1;
    in.tokenIds = &token;
    in.positions = &pos;
    in.slotMapping = &slot;
    in.blockTables = table.data();
    in.temperature = &temperature;
    in.topK = &topK;
    in.topP = &topP;
    in.seeds = &seed;
    const std::vector<int32_t> next = decoder.step(in);
    if (pos + 1 >= static_cast<int>(prompt.size())) {
      run.tokens.push_back(next[0]);
      const std::vector<float> logits = decoder.downloadLogits(1);
      run.logits.insert(run.logits.end(), logits.begin(), logits.end());
      token = next[0];
    } else {
      token = prompt[pos + 1];
    }
  }
  return run;
}

}  // namespace afd::cuda

namespace afd::cuda {
namespace {

// Both stages of one split step: attention of stage s, its FFN half on the same GPU,
// then the FFN output added to the residual and normed for the next layer.
void enqueueSplitStep(MoeDecoder& dec, CudaBackend& backend, const int begin[2], const int count[2], float* ffnOut,
                      const int32_t* identity, const float* ones) {
  const ModelConfig& c = dec.config();
  const int total = count[0] + count[1];
  const size_t H = c.hiddenSize;
  dec.enqueueEmbed(total);
  for (int l = 0; l < c.numLayers; ++l) {
    for (int s = 0; s < 2; ++s) {
      dec.enqueueAttentionHalf(l, begin[s], count[s], total);
      float* out = ffnOut + static_cast<size_t>(begin[s]) * H;
      dec.enqueueFfnHalf(l, dec.xNormRows(begin[s]), count[s], out, false, nullptr, nullptr, total);
      MoeCombineArgs cb;
      cb.expertOut = out;
      cb.pairPosition = identity;
      cb.topkWeights = ones;
      cb.out = dec.residualRows(begin[s]);
      cb.accumulate = true;
      cb.normWeight = dec.nextNormWeight(l);
      cb.normOut = dec.xNormRows(begin[s]);
      cb.rows = count[s];
      cb.hidden = static_cast<int>(H);
      cb.topK = 1;
      cb.eps = static_cast<float>(c.rmsNormEps);
      moeCombine(cb, backend.stream());
    }
  }
  dec.enqueueHead(total);
}

}  // namespace

SplitStageCheck runSplitStageCheck(const ModelConfig& config, int rows, bool exactGemm, int steps, int context,
                                   uint64_t seed, int deviceIndex) {
  AFD_CHECK(rows >= 2 && steps >= 1 && context >= 1, "split-stage check: need rows >= 2, steps >= 1, context >= 1");
  CudaBackend backend(deviceIndex);
  DecoderOptions opt;
  opt.maxBatch = rows;
  opt.maxContext = context + steps + 16;
  opt.useGraphs = false;  // eager both ways: the comparison is about the split, not the graph
  opt.stageExactGemm = exactGemm;
  MoeDecoder dec(backend, config, opt);
  AFD_CHECK(dec.paddedBatch(rows) == rows, "split-stage check: " << rows << " rows is not a decoder bucket");
  dec.initSynthetic(seed);
  dec.fillKvRandom(seed + 1);
  SplitStageCheck r;
  r.rows = rows;
  r.stageRows[0] = rows - rows / 2;
  r.stageRows[1] = rows / 2;
  r.exactGemm = exactGemm;
  r.steps = steps;
  const int begin[2] = {0, r.stageRows[0]};
  DeviceBuffer ffnOut("split check FFN outputs", static_cast<size_t>(rows) * config.hiddenSize * 4);
  DeviceBuffer identity("split check identity", 4ull * rows), ones("split check ones", 4ull * rows);
  std::vector<int32_t> ids(rows);
  std::vector<float> onesHost(rows, 1.0f);
  for (int i = 0; i < rows; ++i) ids[i] = i;
  AFD_CUDA_CHECK(cudaMemcpy(identity.data(), ids.data(), 4ull * rows, cudaMemcpyHostToDevice));
  AFD_CUDA_CHECK(cudaMemcpy(ones.data(), onesHost.data(), 4ull * rows, cudaMemcpyHostToDevice));

  SyntheticDecodeBatch batch(rows, dec.maxBlocksPerSeq(), 16, config.vocabSize);
  const DecodeInput& in = batch.view;
  for (int k = 0; k < steps; ++k) {
    batch.at(context + k);
    const std::vector<int32_t> want = dec.step(in);
    const std::vector<float> wantLogits = dec.downloadLogits(rows);
    dec.upload(in, rows);
    enqueueSplitStep(dec, backend, begin, r.stageRows, ffnOut.as<float>(), identity.as<int32_t>(), ones.as<float>());
    const std::vector<int32_t> got = dec.downloadTokens(rows);
    const std::vector<float> gotLogits = dec.downloadLogits(rows);
    int bad = 0;
    for (int s = 0; s < rows; ++s) bad += got[s] != want[s];
    r.mismatchedTokens += bad;
    r.mismatchedSteps += bad > 0;
    bool bitEqual = true;
    for (size_t i = 0; i < wantLogits.size(); ++i) {
      const double d = std::fabs(static_cast<double>(gotLogits[i]) - wantLogits[i]);
      if (!(d == 0.0)) bitEqual = false;
      if (d > r.maxLogitAbsDiff || d != d) r.maxLogitAbsDiff = d != d ? 1e30 : d;
    }
    r.logitStepsBitEqual += bitEqual;
    batch.setTokens(want);  // the unsplit step's tokens feed both runs of the next step
  }
  return r;
}

}  // namespace afd::cuda
