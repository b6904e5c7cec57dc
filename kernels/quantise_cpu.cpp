#include "kernels/quantise.hpp"

#include "kernels/vector_clones.hpp"

namespace sb {

// A block at a time: its uniforms first (integer mixing), then the rounding (float work), two
// loops that each vectorise on their own.
SB_VECTOR_CLONES void stochastic_levels_cpu(const float* values, size_t count, float unit_inverse, float s, uint64_t key,
                                            int8_t* level) {
  float uniform[kQuantiseBlock];
  for (size_t begin = 0; begin < count; begin += kQuantiseBlock) {
    const size_t n = count - begin < kQuantiseBlock ? count - begin : kQuantiseBlock;
    const size_t half = (n + 1) / 2;
    for (size_t j = 0; j < half; ++j) {
      const uint64_t bits = random_bits(key, begin / 2 + j);
      uniform[j] = uniform_from_bits(bits, true);
      uniform[j + half] = uniform_from_bits(bits, false);
    }
    for (size_t i = 0; i < n; ++i) level[begin + i] = stochastic_level(values[begin + i], unit_inverse, s, uniform[i]);
  }
}

}  // namespace sb
