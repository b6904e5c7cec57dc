#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sb {

double mean(const std::vector<double>& samples) {
  if (samples.empty()) return 0;
  return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  // Nearest rank: the smallest sample with at least q% of the samples at or below it.
  const double rank = std::ceil(q / 100.0 * static_cast<double>(samples.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(samples.size()))) - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(index), samples.end());
  return samples[index];
}

}  // namespace sb
