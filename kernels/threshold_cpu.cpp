#include "kernels/threshold.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/magnitude_scan.hpp"
#include "kernels/random.hpp"

namespace sb {

ThresholdSampling dgc_sampling(size_t count, double ratio, uint64_t seed, uint64_t step) {
  return {std::max<size_t>(count / 100, 1024), std::min(1.0, 2 * ratio), random_key(seed, 0x64676374, step)};
}

size_t sample_size(size_t count, size_t samples) { return samples >= count ? count : std::max<size_t>(samples, 1); }

float magnitude_quantile(std::vector<float>& magnitudes, double ratio) {
  if (magnitudes.empty()) return 0.0f;
  // NaN ranks above every number (as in top-k), and must not reach the comparisons as NaN.
  for (float& m : magnitudes)
    if (std::isnan(m)) m = INFINITY;
  const size_t above = std::clamp<size_t>(static_cast<size_t>(std::ceil(ratio * static_cast<double>(magnitudes.size()))), 1,
                                          magnitudes.size());
  const auto nth = magnitudes.begin() + static_cast<std::ptrdiff_t>(above - 1);
  std::nth_element(magnitudes.begin(), nth, magnitudes.end(), std::greater<float>());
  return *nth;
}

float sampled_threshold(const float* values, size_t count, double ratio, size_t samples, uint64_t key) {
  if (count == 0) return 0.0f;
  std::vector<float> magnitudes(sample_size(count, samples));
  if (magnitudes.size() == count) {
    for (size_t i = 0; i < count; ++i) magnitudes[i] = std::fabs(values[i]);
  } else {
    // Random reads of a large gradient each miss the cache: a batch's positions are drawn and
    // prefetched first, so that its misses overlap instead of coming one after another (3x
    // faster on 16M values; the same samples).
    constexpr size_t kBatch = 64;
    size_t position[kBatch];
    for (size_t first = 0; first < magnitudes.size(); first += kBatch) {
      const size_t n = std::min(kBatch, magnitudes.size() - first);
      for (size_t j = 0; j < n; ++j) {
        position[j] = sample_position(key, first + j, count);
        __builtin_prefetch(values + position[j]);
      }
      for (size_t j = 0; j < n; ++j) magnitudes[first + j] = std::fabs(values[position[j]]);
    }
  }
  return magnitude_quantile(magnitudes, ratio);
}

void select_at_least(const float* values, size_t count, float threshold, std::vector<uint32_t>& indices) {
  // |x| >= threshold (>= 0) exactly when x's magnitude key is at least the threshold's; NaN's
  // key is above every number's.
  for_each_at_least(values, count, magnitude_key(threshold),
                    [&](size_t i, uint32_t) { indices.push_back(static_cast<uint32_t>(i)); });
}

}  // namespace sb
