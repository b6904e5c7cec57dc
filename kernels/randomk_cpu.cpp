#include "kernels/randomk.hpp"

#include <bit>

#include "kernels/random.hpp"

namespace sb {

// Floyd's sampling: for j = count - k .. count - 1, draw t in [0, j] and take t, or j if t was
// taken already. The taken set lives in a bitmap of count bits (count / 8 bytes: 3 MiB for 25M
// values), so each draw is one bit test and set, and reading the bitmap in order gives the
// indices ascending, with no hash set and no sort.
std::vector<uint32_t> randomk_indices(size_t count, size_t k, uint64_t seed, uint64_t step) {
  const uint64_t key = random_key(seed, 0x72616e646b, step);
  std::vector<uint64_t> taken((count + 63) / 64, 0);
  auto is_taken = [&](size_t i) { return (taken[i / 64] >> (i % 64)) & 1; };
  auto take = [&](size_t i) { taken[i / 64] |= uint64_t{1} << (i % 64); };
  for (size_t j = count - k; j < count; ++j) {
    const size_t t = static_cast<uint32_t>(random_bits(key, j) % (j + 1));
    take(is_taken(t) ? j : t);
  }
  std::vector<uint32_t> indices;
  indices.reserve(k);
  for (size_t w = 0; w < taken.size(); ++w)
    for (uint64_t bits = taken[w]; bits != 0; bits &= bits - 1)
      indices.push_back(static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
  return indices;
}

}  // namespace sb
