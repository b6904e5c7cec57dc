#pragma once
// --balance: how a global batch is shared among ranks of unequal speed.
#include <cstdint>
#include <vector>

namespace sb::models {

// Each rank's share of `batch` in proportion to its speed (1 / seconds per image), at least one
// image each, summing to `batch` (which is at least the number of ranks): rounded down, then the
// surplus taken from the largest shares and the deficit given to those furthest below their ideal.
std::vector<int64_t> shares_by_speed(int64_t batch, const std::vector<double>& seconds_per_image);

}  // namespace sb::models
