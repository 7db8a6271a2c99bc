// Small statistics helpers of the CUDA benchmark programs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace afd::cuda {

// The q-quantile (0..1) of the samples, nearest rank; NaN when there are none.
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(q * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}
inline double median(const std::vector<double>& v) { return percentile(v, 0.5); }

}  // namespace afd::cuda
