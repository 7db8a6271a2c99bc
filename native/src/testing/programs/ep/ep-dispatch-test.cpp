// Unit tests of the expert-parallel dispatch plan (ep/dispatch.h): which pairs go
// to which owner, their index there, and the combine order. Built and run by
// ep/epDispatch.test.ts.
#include <string>
#include <vector>

#include "core/error.h"
#include "ep/dispatch.h"
#include "testing/programs/harness.h"

using namespace afd;

TEST(pairs_go_to_the_owner_of_their_expert_in_row_order) {
  // 2 tokens, top-2 of 6 experts over 2 ranks: experts 0-2 on rank 0, 3-5 on rank 1.
  const std::vector<int32_t> ids = {0, 5, 3, 1};
  const EpDispatchPlan p = planDispatch(ids.data(), 2, 2, 6, 2);
  CHECK((p.pairsOf[0] == std::vector<int32_t>{0, 3}));
  CHECK((p.pairsOf[1] == std::vector<int32_t>{1, 2}));
  CHECK((p.ownerOf == std::vector<int32_t>{0, 1, 1, 0}));
  CHECK((p.indexAtOwner == std::vector<int32_t>{0, 0, 1, 1}));
}

TEST(a_token_is_combined_in_expert_id_order) {
  // Top-k lists experts by weight; the colocated MoE sums them by expert id.
  const std::vector<int32_t> ids = {4, 0, 2, 3, 1, 5};
  const EpDispatchPlan p = planDispatch(ids.data(), 2, 3, 6, 3);
  CHECK((p.combineOrder == std::vector<int32_t>{1, 2, 0, 4, 3, 5}));
}

TEST(ranks_beyond_the_expert_count_get_nothing) {
  const std::vector<int32_t> ids = {0, 1};
  const EpDispatchPlan p = planDispatch(ids.data(), 1, 2, 2, 4);
  CHECK(p.pairsOf[0].size() == 1 && p.pairsOf[1].empty() && p.pairsOf[2].size() == 1 && p.pairsOf[3].empty());
}

TEST(an_expert_outside_the_model_is_an_error_naming_the_token) {
  const std::vector<int32_t> ids = {0, 1, 7, 2};
  try {
    planDispatch(ids.data(), 2, 2, 6, 2);
    CHECK_MSG(false, "no error");
  } catch (const afd::Error& e) {
    CHECK_MSG(std::string(e.what()).find("expert 7 for token 1") != std::string::npos, e.what());
  }
}

TEST(no_rows_plan_nothing) {
  const EpDispatchPlan p = planDispatch(nullptr, 0, 2, 6, 3);
  for (const auto& l : p.pairsOf) CHECK(l.empty());
  CHECK(p.combineOrder.empty());
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
