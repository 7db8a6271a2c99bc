// Conformance of the ops between the LM head and the token (core/logit-ops.h): logit
// bias and penalties, sampling with min-p and the sampled tokens' log-probability rows,
// and log-probability rows of given tokens, CUDA against the CPU backend.
#include "cuda/testing/conformance-suite.h"

namespace afd::cuda::conformance {
namespace {

constexpr int kRows = 16;
constexpr int64_t kVocab = 1001;

// Norm-wise |got - ref| / |ref| over entries where both are numbers; an entry that is
// NaN on one side only (a pad written where a value belongs, or the reverse) is a mismatch.
void checkValues(Suite& s, const std::string& op, const std::string& shape, const std::vector<float>& ref,
                 const std::vector<float>& got, double bound) {
  ConformanceCase c{op, shape, "f32"};
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i]) || std::isnan(got[i])) {
      c.mismatches += std::isnan(ref[i]) != std::isnan(got[i]) ? 1 : 0;
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
void randomLists(Suite& s, int count, std::vector<int32_t>& offsets, std::vector<int32_t>& ids) {
  offsets.assign(1, 0);
  ids.clear();
  for (int r = 0; r < kRows; ++r) {
    std::vector<int32_t> pick(kVocab);
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
  samplingCase(s);
  logprobsCase(s);
}

}  // namespace afd::cuda::conformance
