// The decode-graph policy of Engine::step, as pure functions (unit-tested on the CPU by
// testing/programs/runtime/engine/engine-graph-test.cpp): which steps may replay a CUDA graph, the bucket a
// stage pads to, the graph cache key, and the padded row layout.
//
// A decode-only step (every sequence has one query token and a context > 1) whose
// per-stage token counts each fit a bucket runs as a graph. Each stage is padded to its
// bucket: real rows keep their order at the start of the stage, pad rows follow. The key
// is (numStages, padded tokens per stage, power-of-two bucket of maxBlocksPerSeq): every
// shape baked into the graph (row counts, block-table width, the attention's context
// capacity and so its split count) is a function of the key.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"

namespace afd {

enum class GraphPolicy { Off, DecodeOnly };

struct GraphOptions {
  GraphPolicy policy = GraphPolicy::Off;
  // Tokens-per-stage sizes to capture, strictly ascending, >= 1 (shared cudaGraph.batchBuckets).
  std::vector<int> batchBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
};

inline GraphPolicy parseGraphPolicy(const std::string& name) {
  if (name == "off") return GraphPolicy::Off;
  if (name == "decode-only") return GraphPolicy::DecodeOnly;
  AFD_FAIL("unknown CUDA graph policy \"" << name << "\" (known: off, decode-only)");
  return GraphPolicy::Off;
}

inline void validateGraphBuckets(const std::vector<int>& buckets) {
  AFD_CHECK(!buckets.empty(), "cudaGraph.batchBuckets needs at least one bucket (e.g. [1, 2, 4, 8])");
  for (size_t i = 0; i < buckets.size(); ++i) {
    AFD_CHECK(buckets[i] >= 1 && buckets[i] <= 65536, "cudaGraph.batchBuckets[" << i << "] = " << buckets[i] << " must be in [1, 65536]");
    AFD_CHECK(i == 0 || buckets[i] > buckets[i - 1], "cudaGraph.batchBuckets must be strictly ascending (got " << buckets[i - 1]
                                                                                                         << " then " << buckets[i] << ")");
  }
}

// Smallest bucket >= n (n >= 0), or 0 when none is large enough.
inline int pickGraphBucket(const std::vector<int>& buckets, int n) {
  for (int b : buckets)
    if (b >= n) return b;
  return 0;
}

// Block-table width baked into a graph: the next power of two >= maxBlocksPerSeq (>= 1).
inline int graphBlocksBucket(int maxBlocksPerSeq) {
  int b = 1;
  while (b < maxBlocksPerSeq) b *= 2;
  return b;
}

// A sequence decodes (rather than prefills) when it has one query token and a context > 1
// (a one-token prompt is a prefill).
inline bool isDecodeRow(int queryTokens, int contextLen) { return queryTokens == 1 && contextLen > 1; }

// True when every sequence of a non-empty step decodes.
inline bool isDecodeOnlyStep(int numSeqs, const int32_t* tokenOffsets, const int32_t* contextLens) {
  if (numSeqs <= 0) return false;
  for (int s = 0; s < numSeqs; ++s)
    if (!isDecodeRow(tokenOffsets[s + 1] - tokenOffsets[s], contextLens[s])) return false;
  return true;
}

struct GraphKey {
  int numStages = 1;
  int stageTokens[2] = {0, 0};  // padded tokens (= sequences) per stage
  int blocksPerSeq = 1;         // graphBlocksBucket(maxBlocksPerSeq)
  bool operator==(const GraphKey& o) const {
    return numStages == o.numStages && stageTokens[0] == o.stageTokens[0] && stageTokens[1] == o.stageTokens[1] &&
           blocksPerSeq == o.blocksPerSeq;
  }
};

struct GraphKeyHash {
  size_t operator()(const GraphKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.numStages);
    h = h * 1000003u + static_cast<uint64_t>(k.stageTokens[0]);
    h = h * 1000003u + static_cast<uint64_t>(k.stageTokens[1]);
    h = h * 1000003u + static_cast<uint64_t>(k.blocksPerSeq);
    return std::hash<uint64_t>()(h);
  }
};

// Where the real rows of a decode step go in the padded batch.
struct DecodePadPlan {
  GraphKey key;
  int realBegin[3] = {0, 0, 0};    // real sequences (= tokens) of stage s: [realBegin[s], realBegin[s + 1])
  int paddedBegin[3] = {0, 0, 0};  // padded rows of stage s: [paddedBegin[s], paddedBegin[s + 1])
  int paddedTokens() const { return paddedBegin[key.numStages]; }
  // Padded row of real sequence / token i.
  int paddedRow(int i) const {
    const int s = key.numStages == 2 && i >= realBegin[1] ? 1 : 0;
    return paddedBegin[s] + (i - realBegin[s]);
  }
};

// Plans the padding of a decode step with numStages stages (seqBegin: [numStages + 1]
// real sequence boundaries). False when a stage fits no bucket (the step runs eagerly).
inline bool planDecodePadding(const std::vector<int>& buckets, int numStages, const int* seqBegin, int maxBlocksPerSeq,
                              DecodePadPlan* out) {
  AFD_CHECK(numStages == 1 || numStages == 2, "a step has 1 or 2 stages, got " << numStages);
  DecodePadPlan p;
  p.key.numStages = numStages;
  p.key.blocksPerSeq = graphBlocksBucket(maxBlocksPerSeq);
  for (int s = 0; s < numStages; ++s) {
    const int n = seqBegin[s + 1] - seqBegin[s];
    const int bucket = pickGraphBucket(buckets, n);
    if (bucket == 0) return false;
    p.key.stageTokens[s] = bucket;
    p.realBegin[s + 1] = seqBegin[s + 1];
    p.paddedBegin[s + 1] = p.paddedBegin[s] + bucket;
  }
  p.realBegin[0] = seqBegin[0];
  if (numStages == 1) {
    p.realBegin[2] = p.realBegin[1];
    p.paddedBegin[2] = p.paddedBegin[1];
  }
  *out = p;
  return true;
}

}  // namespace afd
