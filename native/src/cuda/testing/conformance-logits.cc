// Conformance of the ops between the LM head and the token (core/logit-ops.h): logit
// bias and penalties, the allowed-token mask with them, sampling with min-p and the
// sampled tokens' log-probability rows (also of masked rows), and log-probability rows of
// given tokens, CUDA against the CPU backend.
#include <cstdint>

#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

constexpr int kRows = 16;
constexpr int64_t kVocab = 1001;

// Norm-wise |got - ref| / |ref| over entries where both are finite; an entry that is NaN
// on one side only (a pad written where a value belongs, or the reverse), or infinite on
// one side or with another sign (a masked token), is a mismatch.
void checkValues(Suite& s, const std::string& op, const std::string& shape, const std::vector<float>& ref,
                 const std::vector<float>& got, double bound) {
  ConformanceCase c{op, shape, "f32"};
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i]) || std::isnan(got[i])) {
      c.mismatches += std::isnan(ref[i]) != std::isnan(got[i]) ? 1 : 0;
      continue;
    }
    if (std::isinf(ref[i]) || std::isinf(got[i])) {
      c.mismatches += ref[i] != got[i] ? 1 : 0;
      continue;
    }
    num += (static_cast<double>(got[i]) - ref[i]) * (static_cast<double>(got[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  c.relError = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  c.bound = bound;
  c.passed = c.mismatches == 0 && ref.size() == got.size() && c.relError <= bound;
  s.results_.push_back(c);
}

// Distinct random ids per row: CSR offsets and ids (count entries per row).
void randomLists(Suite& s, int count, std::vector<int32_t>& offsets, std::vector<int32_t>& ids, int64_t vocab = kVocab) {
  offsets.assign(1, 0);
  ids.clear();
  for (int r = 0; r < kRows; ++r) {
    std::vector<int32_t> pick(vocab);
    std::iota(pick.begin(), pick.end(), 0);
    std::shuffle(pick.begin(), pick.end(), s.rng_);
    const int n = r % 4 == 3 ? 0 : count;  // some rows have no list
    ids.insert(ids.end(), pick.begin(), pick.begin() + n);
    offsets.push_back(static_cast<int32_t>(ids.size()));
  }
}

void processingCase(Suite& s) {
  Twin logits = s.random(DType::F32, {kRows, kVocab}, -6, 6);
  std::vector<int32_t> seenOffsets, seenIds, biasOffsets, biasIds, counts;
  randomLists(s, 256, seenOffsets, seenIds);
  randomLists(s, 16, biasOffsets, biasIds);
  std::vector<float> biasValues(biasIds.size()), presence(kRows), frequency(kRows), repetition(kRows);
  for (size_t i = 0; i < biasIds.size(); ++i) biasValues[i] = static_cast<float>(s.randInt(-50, 50)) / 10.0f;
  for (size_t i = 0; i < seenIds.size(); ++i) counts.push_back(s.randInt(0, 5));
  for (int r = 0; r < kRows; ++r) {
    presence[r] = 0.5f * (r % 3);
    frequency[r] = 0.25f * (r % 2);
    repetition[r] = 1.0f + 0.1f * (r % 5);
  }
  LogitProcessing p{presence.data(), frequency.data(), repetition.data(), seenOffsets.data(), seenIds.data(),
                    counts.data(),   biasOffsets.data(), biasIds.data(), biasValues.data()};
  Tensor lc = logits.cpu(), lg = logits.gpu();
  s.cpu_.processLogits(lc, p);
  s.cuda_.processLogits(lg, p);
  s.check("processLogits", "S16 V1001 bias 16 seen 256", "f32", logits, kF32Bound);
}

// Mask rows of the masked cases: rows r % 4 == 1 have none, the others take mask rows in
// reverse order (the mapping is not the identity). Row kinds: every other 32-token block
// allowed, random bits, or five random tokens (fewer than a top 20: -inf entries follow).
struct Masks {
  std::vector<int32_t> maskRow = std::vector<int32_t>(kRows, -1), words;
  int rows = 0, wordsPerRow = 0;
  Masks(Suite& s, int64_t vocab) {
    wordsPerRow = static_cast<int>(maskWordsOf(vocab));
    for (int r = kRows - 1; r >= 0; --r)
      if (r % 4 != 1) maskRow[r] = rows++;
    words.assign(static_cast<size_t>(rows) * wordsPerRow, 0);
    for (int m = 0; m < rows; ++m) {
      int32_t* w = words.data() + static_cast<size_t>(m) * wordsPerRow;
      for (int i = 0; i < wordsPerRow; ++i) w[i] = m % 3 == 0 ? (i % 2 == 0 ? -1 : 0) : m % 3 == 1 ? s.randInt(INT32_MIN, INT32_MAX) : 0;
      for (int k = 0; m % 3 == 2 && k < 5; ++k) {
        const int t = s.randInt(0, static_cast<int>(vocab) - 1);
        w[t >> 5] |= static_cast<int32_t>(1u << (t & 31));
      }
    }
  }
  void into(LogitProcessing& p) const {
    p.maskRow = maskRow.data();
    p.mask = words.data();
    p.numMaskRows = rows;
    p.maskWords = wordsPerRow;
  }
};

// The mask with bias and penalties (lists reach masked tokens too) over a vocabulary of
// several mask chunks, then sampling and top-20 log-probabilities of the processed rows.
void maskedCase(Suite& s) {
  constexpr int64_t V = 20000;
  Twin logits = s.random(DType::F32, {kRows, V}, -6, 6);
  std::vector<int32_t> seenOffsets, seenIds, biasOffsets, biasIds, counts;
  randomLists(s, 256, seenOffsets, seenIds, V);
  randomLists(s, 64, biasOffsets, biasIds, V);
  std::vector<float> biasValues(biasIds.size()), presence(kRows, 0.5f), frequency(kRows, 0.25f), repetition(kRows, 1.3f);
  for (size_t i = 0; i < biasIds.size(); ++i) biasValues[i] = static_cast<float>(s.randInt(-50, 50)) / 10.0f;
  for (size_t i = 0; i < seenIds.size(); ++i) counts.push_back(s.randInt(0, 5));
  const Masks masks(s, V);
  LogitProcessing p{presence.data(), frequency.data(), repetition.data(), seenOffsets.data(), seenIds.data(),
                    counts.data(),   biasOffsets.data(), biasIds.data(), biasValues.data()};
  masks.into(p);
  Tensor lc = logits.cpu(), lg = logits.gpu();
  s.cpu_.processLogits(lc, p);
  s.cuda_.processLogits(lg, p);
  s.cuda_.synchronize();
  checkValues(s, "processLogits+mask", "S16 V20000 mask 12 rows, bias 64 seen 256", logits.hostFloats(), logits.deviceFloats(), kF32Bound);
  // Sampling (every setting mix) and top-20 log-probabilities of every row, on the processed rows of each side.
  std::vector<int32_t> refTokens(kRows), gotTokens(kRows), topK(kRows, kMaxTopLogprobs);
  std::vector<float> temperature(kRows), topP(kRows, 1.0f), minP(kRows, 0.0f);
  std::vector<int32_t> k(kRows), positions(kRows);
  std::vector<uint32_t> seeds(kRows);
  for (int i = 0; i < kRows; ++i) {
    temperature[i] = i % 5 == 0 ? 0.0f : 0.7f + 0.1f * (i % 4);
    k[i] = i % 3 == 0 ? 0 : 40;
    topP[i] = i % 4 == 0 ? 0.9f : 1.0f;
    minP[i] = i % 2 == 0 ? 0.0f : 0.05f;
    seeds[i] = 7u + 13u * i;
    positions[i] = 3 * i + 1;
  }
  LogprobRequest req;
  req.numRows = kRows;
  req.width = kMaxTopLogprobs + 1;
  req.topK = topK.data();
  req.temperature = temperature.data();
  const size_t cells = static_cast<size_t>(kRows) * req.width;
  std::vector<int32_t> refIds(cells), gotIds(cells), refRanks(kRows), gotRanks(kRows);
  std::vector<float> refValues(cells), gotValues(cells);
  SamplingBatch b;
  b.temperature = temperature.data();
  b.topK = k.data();
  b.topP = topP.data();
  b.seeds = seeds.data();
  b.positions = positions.data();
  b.minP = minP.data();
  b.logprobs = &req;
  b.logprobsOut = LogprobRows{refIds.data(), refValues.data(), refRanks.data()};
  s.cpu_.sample(logits.cpu(), b, refTokens.data());
  b.logprobsOut = LogprobRows{gotIds.data(), gotValues.data(), gotRanks.data()};
  s.cuda_.sample(logits.gpu(), b, gotTokens.data());
  int banned = 0;  // tokens a mask row bans, sampled by CUDA: must be none
  for (int r = 0; r < kRows; ++r)
    if (masks.maskRow[r] >= 0 && !maskAllows(masks.words.data() + static_cast<size_t>(masks.maskRow[r]) * masks.wordsPerRow, gotTokens[r])) ++banned;
  s.checkExact("sample+mask", "S16 V20000 masked rows", refTokens, gotTokens);
  s.checkExact("sample+mask.banned", "S16 V20000 sampled tokens the mask bans", std::vector<int32_t>{0}, std::vector<int32_t>{banned});
  s.checkExact("sample+mask.logprobIds", "16 rows k 20", refIds, gotIds);
  s.checkExact("sample+mask.logprobRanks", "16 rows", refRanks, gotRanks);
  checkValues(s, "sample+mask.logprobs", "16 rows k 20 (-inf past a 5-token mask)", refValues, gotValues, 1e-5);
}

// Sampling settings of the rows: temperatures (some greedy), top-k / top-p / min-p mixes.
struct Settings {
  std::vector<float> temperature = std::vector<float>(kRows), topP = std::vector<float>(kRows), minP = std::vector<float>(kRows);
  std::vector<int32_t> topK = std::vector<int32_t>(kRows), positions = std::vector<int32_t>(kRows);
  std::vector<uint32_t> seeds = std::vector<uint32_t>(kRows);
  Settings() {
    for (int i = 0; i < kRows; ++i) {
      temperature[i] = i % 5 == 0 ? 0.0f : 0.6f + 0.1f * (i % 6);
      topK[i] = i % 3 == 0 ? 0 : 40;
      topP[i] = i % 4 == 0 ? 0.8f : 1.0f;
      minP[i] = i % 2 == 0 ? 0.0f : 0.02f * (i % 7);
      seeds[i] = 99u + 31u * i;
      positions[i] = 5 * i + 2;
    }
  }
};

void samplingCase(Suite& s) {
  Twin logits = s.random(DType::F32, {kRows, kVocab}, -6, 6);
  Settings st;
  std::vector<int32_t> rows, topK;
  std::vector<float> temperature;
  for (int r = 1; r < kRows; r += 2) {  // every other row asks, k from 0 to 20
    rows.push_back(r);
    topK.push_back((r * 3) % (kMaxTopLogprobs + 1));
    temperature.push_back(st.temperature[r]);
  }
  LogprobRequest req;
  req.numRows = static_cast<int>(rows.size());
  req.width = kMaxTopLogprobs + 1;
  req.rows = rows.data();
  req.topK = topK.data();
  req.temperature = temperature.data();
  const size_t cells = rows.size() * req.width;
  std::vector<int32_t> refTokens(kRows), gotTokens(kRows), refIds(cells), gotIds(cells), refRanks(rows.size()), gotRanks(rows.size());
  std::vector<float> refValues(cells), gotValues(cells);
  SamplingBatch p;
  p.temperature = st.temperature.data();
  p.topK = st.topK.data();
  p.topP = st.topP.data();
  p.seeds = st.seeds.data();
  p.positions = st.positions.data();
  p.minP = st.minP.data();
  p.logprobs = &req;
  p.logprobsOut = LogprobRows{refIds.data(), refValues.data(), refRanks.data()};
  s.cpu_.sample(logits.cpu(), p, refTokens.data());
  p.logprobsOut = LogprobRows{gotIds.data(), gotValues.data(), gotRanks.data()};
  s.cuda_.sample(logits.gpu(), p, gotTokens.data());
  s.checkExact("sample+minP", "S16 V1001 greedy/temperature/topK/topP/minP", refTokens, gotTokens);
  s.checkExact("sample.logprobIds", "8 rows k 0..20", refIds, gotIds);
  s.checkExact("sample.logprobRanks", "8 rows", refRanks, gotRanks);
  checkValues(s, "sample.logprobs", "8 rows k 0..20", refValues, gotValues, 1e-5);
}

void logprobsCase(Suite& s) {
  const int R = 40;  // more rows than a step samples: prompt rows
  Twin logits = s.random(DType::F32, {R, kVocab}, -8, 8);
  std::vector<int32_t> targets(R), topK(R);
  for (int j = 0; j < R; ++j) {
    targets[j] = s.randInt(0, kVocab - 1);
    topK[j] = j % 6;
  }
  LogprobRequest req;
  req.numRows = R;
  req.width = 6;
  req.topK = topK.data();
  req.targets = targets.data();
  std::vector<int32_t> refIds(R * 6), gotIds(R * 6), refRanks(R), gotRanks(R);
  std::vector<float> refValues(R * 6), gotValues(R * 6);
  s.cpu_.logprobs(logits.cpu(), req, LogprobRows{refIds.data(), refValues.data(), refRanks.data()});
  s.cuda_.logprobs(logits.gpu(), req, LogprobRows{gotIds.data(), gotValues.data(), gotRanks.data()});
  s.checkExact("logprobs.ids", "R40 V1001 k 0..5", refIds, gotIds);
  s.checkExact("logprobs.ranks", "R40 V1001", refRanks, gotRanks);
  checkValues(s, "logprobs", "R40 V1001 k 0..5", refValues, gotValues, 1e-5);
}

}  // namespace

void logitOps(Suite& s) {
  processingCase(s);
  maskedCase(s);
  samplingCase(s);
  logprobsCase(s);
}

}  // namespace afd::cuda::conformance
