// Op conformance: every CUDA backend op against the CPU backend op on fresh random
// inputs of several shapes (odd sizes included). CUDA outputs are poisoned with NaN
// first, so an element the kernel never wrote fails the case.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend-options.h"

namespace afd::cuda {

struct ConformanceCase {
  std::string op;
  std::string shape;   // human-readable case description
  std::string dtype;   // weight / cache dtype of the case
  double relError = 0;     // ||cuda - cpu|| / ||cpu||
  double bound = 0;        // allowed relError
  int64_t unwritten = 0;   // NaN elements left in the CUDA output
  int64_t mismatches = 0;  // integer outputs (ids, tokens) that differ
  bool passed = false;
};

// family: "" = every family, else one of conformanceFamilies(). A family that throws
// becomes one failed case naming the error (the other families still run). options: the
// CUDA backend's kernel choices (the cases that go through the backend's dispatch use them).
std::vector<ConformanceCase> runConformance(int deviceIndex, const CudaOptions& options, uint64_t seed,
                                            const std::string& family = "");
std::vector<std::string> conformanceFamilies();

}  // namespace afd::cuda
