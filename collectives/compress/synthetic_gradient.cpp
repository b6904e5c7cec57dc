#include "collectives/compress/synthetic_gradient.hpp"

#include <cmath>
#include <random>

namespace sb {

std::vector<float> heavy_tailed_gradient(size_t count, uint64_t seed, float spread, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = scale * normal(rng) * std::exp(spread * normal(rng));
  return values;
}

}  // namespace sb
