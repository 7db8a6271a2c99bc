// Synthetic greedy decode inputs for benchmarks and checks of the fused decoder: `rows`
// sequences, sequence i owns KV blocks [i * maxBlocks, (i + 1) * maxBlocks); at(pos)
// points every row at position pos (the KV before it is random or earlier steps').
#pragma once
#include <cstdint>
#include <vector>

#include "cuda/moe-decoder.h"

namespace afd::cuda {

struct SyntheticDecodeBatch {
  std::vector<int32_t> tokens, positions, slots, tables, topK;
  std::vector<float> temperature, topP;
  std::vector<uint32_t> seeds;
  DecodeInput view;
  SyntheticDecodeBatch(int rows, int maxBlocks, int blockSize, int64_t vocab) {
    tokens.resize(rows);
    for (int i = 0; i < rows; ++i) tokens[i] = static_cast<int32_t>((i * 7919ll + 13) % vocab);
    positions.assign(rows, 0);
    slots.assign(rows, 0);
    tables.resize(static_cast<size_t>(rows) * maxBlocks);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < maxBlocks; ++j) tables[static_cast<size_t>(i) * maxBlocks + j] = i * maxBlocks + j;
    temperature.assign(rows, 0.f);
    topK.assign(rows, 0);
    topP.assign(rows, 1.f);
    seeds.resize(rows);
    for (int i = 0; i < rows; ++i) seeds[i] = static_cast<uint32_t>(i + 1);
    view.rows = rows;
    view.tokenIds = tokens.data();
    view.positions = positions.data();
    view.slotMapping = slots.data();
    view.blockTables = tables.data();
    view.temperature = temperature.data();
    view.topK = topK.data();
    view.topP = topP.data();
    view.seeds = seeds.data();
    blockSize_ = blockSize;
    maxBlocks_ = maxBlocks;
  }
  void at(int pos) {
    for (size_t i = 0; i < positions.size(); ++i) {
      positions[i] = pos;
      slots[i] = tables[i * maxBlocks_ + pos / blockSize_] * blockSize_ + pos % blockSize_;
    }
  }
  // Feeds sampled tokens back as the next step's inputs.
  void setTokens(const std::vector<int32_t>& next) {
    tokens = next;
    view.tokenIds = tokens.data();
  }
  SyntheticDecodeBatch(const SyntheticDecodeBatch&) = delete;  // view points into this object
  SyntheticDecodeBatch& operator=(const SyntheticDecodeBatch&) = delete;
  int blockSize_ = 16, maxBlocks_ = 1;
};

}  // namespace afd::cuda
