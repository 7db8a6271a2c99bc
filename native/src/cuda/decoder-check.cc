#include "cuda/decoder-check.h"

#include <stdexcept>

#include "cuda/cuda-backend.h"
#include "cuda/moe-decoder.h"

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
