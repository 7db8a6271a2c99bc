// Unit tests of the GPU-per-rank check of expert parallelism's NCCL exchange
// (ep/gpu-placement.h). Built and run by ep/epGpuPlacement.test.ts.
#include <string>
#include <vector>

#include "ep/gpu-placement.h"
#include "testing/programs/harness.h"

using namespace afd;

TEST(ranks_on_distinct_gpus_or_hosts_pass) {
  CHECK(sharedGpuConflict({{"a", "0000:01:00.0"}, {"a", "0000:02:00.0"}, {"b", "0000:01:00.0"}}).empty());
  CHECK(sharedGpuConflict({}).empty());
  CHECK(sharedGpuConflict({{"a", "0000:01:00.0"}}).empty());
}

TEST(two_ranks_on_one_gpu_are_named) {
  const std::string why = sharedGpuConflict({{"a", "0000:01:00.0"}, {"b", "0000:01:00.0"}, {"a", "0000:01:00.0"}});
  CHECK_MSG(why == "FFN ranks 0 and 2 both use GPU 0000:01:00.0 of host a", why);
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }
