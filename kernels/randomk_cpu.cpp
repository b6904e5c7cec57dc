#include "kernels/randomk.hpp"

#include <algorithm>
#include <unordered_set>

#include "kernels/random.hpp"

namespace sb {

std::vector<uint32_t> randomk_indices(size_t count, size_t k, uint64_t seed, uint64_t step) {
  const uint64_t key = random_key(seed, 0x72616e646b, step);
  std::unordered_set<uint32_t> chosen;
  chosen.reserve(k * 2);
  for (size_t j = count - k; j < count; ++j) {
    const uint32_t t = static_cast<uint32_t>(random_bits(key, j) % (j + 1));
    chosen.insert(chosen.count(t) ? static_cast<uint32_t>(j) : t);
  }
  std::vector<uint32_t> indices(chosen.begin(), chosen.end());
  std::sort(indices.begin(), indices.end());
  return indices;
}

}  // namespace sb
