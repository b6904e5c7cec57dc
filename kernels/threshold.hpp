#pragma once
// Deep Gradient Compression's selection (Lin et al. 2018): rather than an exact top-k over the
// whole gradient, estimate the magnitude threshold of the top `ratio` from a random sample, keep
// every value above it, and settle the exact top-k only among those few candidates.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sb {

// The magnitude above which about `ratio` of the values lie: the (1 - ratio) quantile of the
// magnitudes of `samples` values drawn at random positions (counter-based, from `key`; with
// replacement). samples >= count reads every value instead, and gives the exact quantile.
float sampled_threshold(const float* values, size_t count, double ratio, size_t samples, uint64_t key);

// Appends to `indices` (ascending) every i with |values[i]| >= threshold (NaN included).
void select_at_least(const float* values, size_t count, float threshold, std::vector<uint32_t>& indices);

}  // namespace sb
