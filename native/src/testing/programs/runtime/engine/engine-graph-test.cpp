// Unit tests of the decode-graph policy (runtime/engine/graph-policy.h): bucket choice,
// graph key, padded layout. Built and run by runtime/engine/engineGraphPolicy.test.ts.
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/engine/graph-policy.h"
#include "testing/programs/harness.h"

using namespace afd;

namespace {

template <typename F>
void expectError(F fn, const std::string& needle) {
  try {
    fn();
  } catch (const afd::Error& e) {
    CHECK_MSG(std::string(e.what()).find(needle) != std::string::npos, "message lacks \"" << needle << "\": " << e.what());
    return;
  }
  CHECK_MSG(false, "expected an error containing \"" << needle << "\"");
}

const std::vector<int> kBuckets = {1, 2, 4, 8, 16};

}  // namespace

TEST(bucket_is_the_smallest_that_fits) {
  CHECK(pickGraphBucket(kBuckets, 0) == 1);
  CHECK(pickGraphBucket(kBuckets, 1) == 1);
  CHECK(pickGraphBucket(kBuckets, 3) == 4);
  CHECK(pickGraphBucket(kBuckets, 8) == 8);
  CHECK(pickGraphBucket(kBuckets, 9) == 16);
  CHECK(pickGraphBucket(kBuckets, 17) == 0);
  CHECK(pickGraphBucket({3, 5}, 4) == 5);
}

TEST(blocks_bucket_is_a_power_of_two) {
  CHECK(graphBlocksBucket(0) == 1);
  CHECK(graphBlocksBucket(1) == 1);
  CHECK(graphBlocksBucket(2) == 2);
  CHECK(graphBlocksBucket(3) == 4);
  CHECK(graphBlocksBucket(64) == 64);
  CHECK(graphBlocksBucket(65) == 128);
}

TEST(decode_only_needs_one_token_and_context_above_one) {
  const int32_t offsets[4] = {0, 1, 2, 3};
  const int32_t ctx[3] = {5, 2, 17};
  CHECK(isDecodeOnlyStep(3, offsets, ctx));
  const int32_t ctxFirst[3] = {5, 1, 17};  // a one-token prompt is a prefill
  CHECK(!isDecodeOnlyStep(3, offsets, ctxFirst));
  const int32_t prefill[4] = {0, 1, 4, 5};
  CHECK(!isDecodeOnlyStep(3, prefill, ctx));
  CHECK(!isDecodeOnlyStep(0, offsets, ctx));
}

TEST(one_stage_pads_to_its_bucket) {
  const int seqBegin[2] = {0, 3};
  DecodePadPlan p;
  CHECK(planDecodePadding(kBuckets, 1, seqBegin, 3, &p));
  CHECK(p.key.numStages == 1 && p.key.stageTokens[0] == 4 && p.key.stageTokens[1] == 0 && p.key.blocksPerSeq == 4);
  CHECK(p.paddedTokens() == 4);
  CHECK(p.paddedRow(0) == 0 && p.paddedRow(2) == 2);
}

TEST(two_stages_pad_each_stage_and_keep_rows_in_order) {
  const int seqBegin[3] = {0, 3, 8};  // stage 0: 3 sequences, stage 1: 5
  DecodePadPlan p;
  CHECK(planDecodePadding(kBuckets, 2, seqBegin, 5, &p));
  CHECK(p.key.stageTokens[0] == 4 && p.key.stageTokens[1] == 8 && p.key.blocksPerSeq == 8);
  CHECK(p.paddedBegin[0] == 0 && p.paddedBegin[1] == 4 && p.paddedBegin[2] == 12 && p.paddedTokens() == 12);
  CHECK(p.paddedRow(0) == 0 && p.paddedRow(2) == 2);
  CHECK(p.paddedRow(3) == 4 && p.paddedRow(7) == 8);  // stage 1 starts at its padded offset
  // Every real row lands inside its stage's padded range, with no two on the same row.
  std::unordered_set<int> seen;
  for (int i = 0; i < 8; ++i) {
    const int s = i < 3 ? 0 : 1, r = p.paddedRow(i);
    CHECK(r >= p.paddedBegin[s] && r < p.paddedBegin[s + 1]);
    CHECK(seen.insert(r).second);
  }
}

TEST(a_stage_too_large_for_every_bucket_runs_eagerly) {
  const int seqBegin[3] = {0, 2, 19};
  DecodePadPlan p;
  CHECK(!planDecodePadding(kBuckets, 2, seqBegin, 1, &p));
}

TEST(keys_differ_by_counts_stages_and_block_bucket) {
  const int one[2] = {0, 3}, two[3] = {0, 2, 3};
  DecodePadPlan a, b, c, d;
  CHECK(planDecodePadding(kBuckets, 1, one, 3, &a));
  CHECK(planDecodePadding(kBuckets, 1, one, 4, &b));  // 3 and 4 blocks share bucket 4
  CHECK(planDecodePadding(kBuckets, 1, one, 5, &c));  // 5 blocks: bucket 8
  CHECK(planDecodePadding(kBuckets, 2, two, 3, &d));
  CHECK(a.key == b.key && GraphKeyHash()(a.key) == GraphKeyHash()(b.key));
  CHECK(!(a.key == c.key));
  CHECK(!(a.key == d.key));
}

TEST(bad_policies_and_buckets_are_refused) {
  CHECK(parseGraphPolicy("off") == GraphPolicy::Off);
  CHECK(parseGraphPolicy("decode-only") == GraphPolicy::DecodeOnly);
  expectError([] { parseGraphPolicy("always"); }, "known: off, decode-only");
  expectError([] { validateGraphBuckets({}); }, "at least one bucket");
  expectError([] { validateGraphBuckets({1, 4, 4}); }, "strictly ascending");
  expectError([] { validateGraphBuckets({0, 4}); }, "must be in [1, 65536]");
  validateGraphBuckets({1, 3, 8});
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
