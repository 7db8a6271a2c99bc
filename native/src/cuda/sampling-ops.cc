#include "cuda/sampling-ops.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/op-checks.h"
#include "cuda/cuda-check.h"
#include "cuda/logit-processing.cuh"
#include "cuda/logprobs.cuh"
#include "cuda/penalty-table.cuh"
#include "cuda/sampling.cuh"

namespace afd::cuda {
namespace {

// Host arrays of one op packed for one upload, then room for the op's outputs (one
// read-back). Offsets are in bytes; every array is 4-byte elements.
class Pack {
 public:
  template <typename T>
  size_t add(const T* data, size_t n) {
    static_assert(sizeof(T) == 4, "Pack holds 4-byte elements");
    AFD_CHECK(outputBytes_ == 0, "Pack: inputs must be added before the outputs");
    const size_t at = host_.size();
    host_.resize(at + n * 4);
    if (n > 0) std::memcpy(host_.data() + at, data, n * 4);
    return at;
  }
  size_t addFilled(float value, size_t n) {
    const std::vector<float> v(n, value);
    return add(v.data(), n);
  }
  // Output space after the inputs (not uploaded).
  size_t output(size_t n) {
    AFD_CHECK(workBytes_ == 0, "Pack: outputs must be added before the work room");
    const size_t at = inputBytes() + outputBytes_;
    outputBytes_ += n * 4;
    return at;
  }
  // Device-only room after the outputs (neither uploaded nor read back).
  size_t work(size_t n) {
    const size_t at = inputBytes() + outputBytes_ + workBytes_;
    workBytes_ += n * 4;
    return at;
  }
  size_t inputBytes() const { return host_.size(); }
  size_t outputBytes() const { return outputBytes_; }
  // Uploads the inputs into the scratch (stream-ordered) and returns its base.
  uint8_t* upload(DeviceMemory& memory, cudaStream_t stream) {
    uint8_t* dev = static_cast<uint8_t*>(memory.scratch(std::max<size_t>(4, inputBytes() + outputBytes_ + workBytes_)));
    if (!host_.empty()) AFD_CUDA_CHECK(cudaMemcpyAsync(dev, host_.data(), host_.size(), cudaMemcpyHostToDevice, stream));
    return dev;
  }

 private:
  std::vector<uint8_t> host_;
  size_t outputBytes_ = 0, workBytes_ = 0;
};

template <typename T>
T* at(uint8_t* base, size_t offset) {
  return reinterpret_cast<T*>(base + offset);
}

// Output offsets of a LogprobRequest's rows inside a Pack.
struct RowsOut {
  size_t ids = 0, values = 0, ranks = 0;
};

// The request's per-row inputs (targets when given) and output room; fills args' pointers once uploaded.
struct PackedRequest {
  size_t rows = 0, topK = 0, targets = 0, temperature = 0;
  RowsOut out;
  size_t partStats = 0, partTopV = 0, partTopI = 0;  // the chunks' partials (work room)
  bool hasRows = false, hasTargets = false, hasTemperature = false;
};

PackedRequest packRequest(Pack& pack, const LogprobRequest& req) {
  PackedRequest p;
  const size_t R = static_cast<size_t>(req.numRows);
  p.hasRows = req.rows != nullptr;
  p.hasTargets = req.targets != nullptr;
  p.hasTemperature = req.temperature != nullptr;
  if (p.hasRows) p.rows = pack.add(req.rows, R);
  p.topK = pack.add(req.topK, R);
  if (p.hasTargets) p.targets = pack.add(req.targets, R);
  if (p.hasTemperature) p.temperature = pack.add(req.temperature, R);
  return p;
}

// The output rows, then (the last of the pack) the device room of the chunks' partials.
void reserveRowsOut(Pack& pack, PackedRequest& p, const LogprobRequest& req, int64_t vocab) {
  const size_t R = static_cast<size_t>(req.numRows), W = static_cast<size_t>(req.width);
  p.out.ids = pack.output(R * W);
  p.out.values = pack.output(R * W);
  p.out.ranks = pack.output(R);
  const size_t perRow = logprobPartialInts(1, req.width, static_cast<int>(vocab));
  p.partStats = pack.work(R * logprobChunks(static_cast<int>(vocab)) * 3);
  p.partTopV = pack.work(R * perRow);
  p.partTopI = pack.work(R * perRow);
}

LogprobArgs argsOf(const PackedRequest& p, const LogprobRequest& req, const Tensor& logits, uint8_t* dev) {
  LogprobArgs a;
  a.logits = logits.ptr<float>();
  a.vocab = static_cast<int>(logits.dim(1));
  a.rows = req.numRows;
  a.width = req.width;
  a.rowOf = p.hasRows ? at<int32_t>(dev, p.rows) : nullptr;
  a.topK = at<int32_t>(dev, p.topK);
  a.targets = p.hasTargets ? at<int32_t>(dev, p.targets) : nullptr;
  a.temperature = p.hasTemperature ? at<float>(dev, p.temperature) : nullptr;
  a.outIds = at<int32_t>(dev, p.out.ids);
  a.outLogprobs = at<float>(dev, p.out.values);
  a.outRanks = at<int32_t>(dev, p.out.ranks);
  a.partStats = at<float>(dev, p.partStats);
  a.partTopV = at<float>(dev, p.partTopV);
  a.partTopI = at<int32_t>(dev, p.partTopI);
  return a;
}

// Splits the read-back outputs (host copy of the output region starting at `first`).
void unpackRowsOut(const std::vector<uint8_t>& host, size_t first, const PackedRequest& p, const LogprobRequest& req,
                   const LogprobRows& out) {
  const size_t R = static_cast<size_t>(req.numRows), W = static_cast<size_t>(req.width);
  std::memcpy(out.tokenIds, host.data() + (p.out.ids - first), R * W * 4);
  std::memcpy(out.logprobs, host.data() + (p.out.values - first), R * W * 4);
  std::memcpy(out.ranks, host.data() + (p.out.ranks - first), R * 4);
}

void checkRequest(const char* op, const LogprobRequest& req, int64_t logitRows) {
  AFD_CHECK(req.width >= 1 && req.width <= kMaxTopLogprobs + 1, op << ": width " << req.width << " outside [1, " << kMaxTopLogprobs + 1 << "]");
  for (int j = 0; j < req.numRows; ++j) {
    AFD_CHECK(req.topK[j] >= 0 && req.topK[j] < req.width, op << ": row " << j << " asks " << req.topK[j] << " top tokens; width is " << req.width);
    const int64_t row = req.rows != nullptr ? req.rows[j] : j;
    AFD_CHECK(row >= 0 && row < logitRows, op << ": output row " << j << " reads logits row " << row << " of " << logitRows);
  }
}

}  // namespace

void SamplingOps::checkSlots(const char* op, const int32_t* slots, size_t rows, int64_t vocab) const {
  for (size_t r = 0; r < rows; ++r)
    AFD_CHECK(slots[r] >= -1 && slots[r] < tableRows_ && (slots[r] < 0 || vocab == tableVocab_),
              op << ": row " << r << " reads penalty slot " << slots[r] << "; the table has " << tableRows_
                 << " seeded slots (seed a slot before a step reads it)");
}

void SamplingOps::seedPenaltySlots(const PenaltySeeds& seeds, int64_t vocab) {
  if (seeds.numSlots == 0) return;
  AFD_CHECK(vocab > 0, "seedPenaltySlots: vocabulary of " << vocab << " tokens");
  int32_t top = vocab == tableVocab_ ? tableRows_ : 0;
  for (int i = 0; i < seeds.numSlots; ++i) {
    AFD_CHECK(seeds.slots[i] >= 0 && seeds.slots[i] < kMaxPenaltySlots,
              "seedPenaltySlots: slot " << seeds.slots[i] << " outside [0, " << kMaxPenaltySlots << ")");
    top = std::max(top, seeds.slots[i] + 1);
  }
  if (vocab != tableVocab_ || top > tableRows_) {
    // Grow (rare: the table follows the most sequences with penalties at once), keeping the rows.
    const size_t rowBytes = static_cast<size_t>(vocab) * 4;
    DeviceBuffer grown("penalty table (" + std::to_string(top) + " slots)", static_cast<size_t>(top) * rowBytes);
    if (vocab == tableVocab_ && tableRows_ > 0)
      AFD_CUDA_CHECK(cudaMemcpyAsync(grown.data(), table_.data(), static_cast<size_t>(tableRows_) * rowBytes, cudaMemcpyDeviceToDevice, ctx_.stream()));
    AFD_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));  // the old table is freed below
    table_ = std::move(grown);
    tableRows_ = top;
    tableVocab_ = vocab;
  }
  const size_t n = static_cast<size_t>(seeds.numSlots), entries = static_cast<size_t>(seeds.offsets[n]);
  Pack pack;
  const size_t slots = pack.add(seeds.slots, n), offsets = pack.add(seeds.offsets, n + 1);
  const size_t ids = pack.add(seeds.ids, entries), counts = pack.add(seeds.counts, entries);
  uint8_t* dev = pack.upload(memory_, ctx_.stream());
  seedPenaltyRows(table_.as<int32_t>(), vocab, seeds.numSlots, at<int32_t>(dev, slots), at<int32_t>(dev, offsets), at<int32_t>(dev, ids),
                  at<int32_t>(dev, counts), ctx_.stream());
}

void SamplingOps::processLogits(Tensor& logits, const LogitProcessing& p) {
  contract::checkShape("processLogits", "logits", logits, {-1, -1});
  contract::checkDType("processLogits", "logits", logits, DType::F32);
  const size_t S = static_cast<size_t>(logits.dim(0));
  if (S == 0) return;
  const size_t numSeen = static_cast<size_t>(p.seenOffsets[S]), numBias = static_cast<size_t>(p.biasOffsets[S]);
  Pack pack;
  const size_t presence = pack.add(p.presence, S), frequency = pack.add(p.frequency, S), repetition = pack.add(p.repetition, S);
  const size_t seenOffsets = pack.add(p.seenOffsets, S + 1), biasOffsets = pack.add(p.biasOffsets, S + 1);
  const size_t seenIds = pack.add(p.seenIds, numSeen), seenCounts = pack.add(p.seenCounts, numSeen);
  const size_t biasIds = pack.add(p.biasIds, numBias), biasValues = pack.add(p.biasValues, numBias);
  // The mask rows go up with the lists (one upload); a step without them sends none.
  const bool masked = p.maskRow != nullptr;
  if (masked) {
    AFD_CHECK(p.maskWords == (logits.dim(1) + 31) / 32, "processLogits: mask rows of " << p.maskWords << " words, expected ceil(V / 32)");
    for (size_t r = 0; r < S; ++r)
      AFD_CHECK(p.maskRow[r] >= -1 && p.maskRow[r] < p.numMaskRows, "processLogits: row " << r << " reads mask row " << p.maskRow[r]
                                                                                          << " of " << p.numMaskRows);
  }
  const size_t maskRow = masked ? pack.add(p.maskRow, S) : 0;
  const size_t mask = masked ? pack.add(p.mask, static_cast<size_t>(p.numMaskRows) * static_cast<size_t>(p.maskWords)) : 0;
  if (p.penaltySlot != nullptr) checkSlots("processLogits", p.penaltySlot, S, logits.dim(1));
  const size_t penaltySlot = p.penaltySlot != nullptr ? pack.add(p.penaltySlot, S) : 0;
  uint8_t* dev = pack.upload(memory_, ctx_.stream());
  LogitProcessingArgs a{logits.ptr<float>(),           static_cast<int>(logits.dim(1)), static_cast<int>(S),
                        at<float>(dev, presence),       at<float>(dev, frequency),       at<float>(dev, repetition),
                        at<int32_t>(dev, seenOffsets),  at<int32_t>(dev, seenIds),       at<int32_t>(dev, seenCounts),
                        at<int32_t>(dev, biasOffsets),  at<int32_t>(dev, biasIds),       at<float>(dev, biasValues)};
  if (masked) {
    a.maskRow = at<int32_t>(dev, maskRow);
    a.mask = at<int32_t>(dev, mask);
    a.maskWords = p.maskWords;
  }
  if (p.penaltySlot != nullptr) {
    a.penaltySlot = at<int32_t>(dev, penaltySlot);
    a.penaltyTable = table_.as<int32_t>();
  }
  processLogitRows(a, ctx_.stream());
}

void SamplingOps::sample(const Tensor& logits, const SamplingBatch& params, int32_t* outTokens) {
  contract::checkShape("sample", "logits", logits, {-1, -1});
  const int S = static_cast<int>(logits.dim(0));
  if (S == 0) return;
  const size_t n = static_cast<size_t>(S);
  const LogprobRequest* req = params.logprobs != nullptr && params.logprobs->numRows > 0 ? params.logprobs : nullptr;
  if (req != nullptr) checkRequest("sample", *req, S);
  // One upload of the per-row settings (and the log-probability request), one read-back
  // of the tokens and the log-probability rows.
  Pack pack;
  const size_t temperature = pack.add(params.temperature, n), topK = pack.add(params.topK, n), topP = pack.add(params.topP, n);
  const size_t seeds = pack.add(params.seeds, n), positions = pack.add(params.positions, n);
  const size_t minP = params.minP != nullptr ? pack.add(params.minP, n) : pack.addFilled(0.0f, n);
  PackedRequest packed;
  if (req != nullptr) packed = packRequest(pack, *req);
  if (params.penaltySlot != nullptr) checkSlots("sample", params.penaltySlot, n, logits.dim(1));
  const size_t penaltySlot = params.penaltySlot != nullptr ? pack.add(params.penaltySlot, n) : 0;
  const size_t tokens = pack.output(n);
  if (req != nullptr) reserveRowsOut(pack, packed, *req, logits.dim(1));
  uint8_t* dev = pack.upload(memory_, ctx_.stream());
  SamplingArgs a;
  a.logits = logits.ptr<float>();
  a.temperature = at<float>(dev, temperature);
  a.topK = at<int32_t>(dev, topK);
  a.topP = at<float>(dev, topP);
  a.seed = at<uint32_t>(dev, seeds);
  a.position = at<int32_t>(dev, positions);
  a.minP = at<float>(dev, minP);
  a.tokens = at<int32_t>(dev, tokens);
  a.rows = S;
  a.vocab = static_cast<int>(logits.dim(1));
  sampleTokens(a, ctx_.stream());
  // The sampler counts its tokens into the penalty table on the device (no host round trip).
  if (params.penaltySlot != nullptr)
    countSampledTokens(table_.as<int32_t>(), a.vocab, S, at<int32_t>(dev, penaltySlot), a.tokens, ctx_.stream());
  if (req != nullptr) {
    LogprobArgs lp = argsOf(packed, *req, logits, dev);
    lp.sampledTokens = a.tokens;  // the chosen token of each row: the one just drawn
    logprobRows(lp, ctx_.stream());
  }
  std::vector<uint8_t> host(pack.outputBytes());
  memory_.copyToHost(host.data(), dev + tokens, host.size());
  std::memcpy(outTokens, host.data(), n * 4);
  if (req != nullptr) unpackRowsOut(host, tokens, packed, *req, params.logprobsOut);
}

void SamplingOps::logprobs(const Tensor& logits, const LogprobRequest& req, const LogprobRows& out) {
  contract::checkShape("logprobs", "logits", logits, {-1, -1});
  contract::checkDType("logprobs", "logits", logits, DType::F32);
  AFD_CHECK(req.targets != nullptr, "logprobs: the request has no chosen tokens (targets)");
  if (req.numRows == 0) return;
  checkRequest("logprobs", req, logits.dim(0));
  for (int j = 0; j < req.numRows; ++j)
    AFD_CHECK(req.targets[j] >= 0 && req.targets[j] < logits.dim(1), "logprobs: row " << j << " chooses token " << req.targets[j]
                                                                                        << ", outside [0, " << logits.dim(1) << ")");
  Pack pack;
  PackedRequest packed = packRequest(pack, req);
  reserveRowsOut(pack, packed, req, logits.dim(1));
  uint8_t* dev = pack.upload(memory_, ctx_.stream());
  logprobRows(argsOf(packed, req, logits, dev), ctx_.stream());
  std::vector<uint8_t> host(pack.outputBytes());
  memory_.copyToHost(host.data(), dev + packed.out.ids, host.size());
  unpackRowsOut(host, packed.out.ids, packed, req, out);
}

}  // namespace afd::cuda
