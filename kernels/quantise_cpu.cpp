#include "kernels/quantise.hpp"

#include "kernels/vector_clones.hpp"

namespace sb {

// The hash and the rounding vectorise together on a 32-bit counter (a 64-bit one costs lane
// shuffles to narrow), in chunks of 2^31 so that it never overflows.
SB_VECTOR_CLONES void stochastic_levels_cpu(const float* values, size_t count, float unit_inverse, float s, uint64_t key,
                                            int8_t* level) {
  constexpr size_t kChunk = size_t{1} << 31;
  const uint32_t key32 = quantise_key(key);
  for (size_t begin = 0; begin < count; begin += kChunk) {
    const uint32_t n = static_cast<uint32_t>(count - begin < kChunk ? count - begin : kChunk);
    const uint32_t first = static_cast<uint32_t>(begin);  // i's low 32 bits
    const float* x = values + begin;
    int8_t* out = level + begin;
    for (uint32_t j = 0; j < n; ++j) out[j] = stochastic_level(x[j], unit_inverse, s, stochastic_uniform(key32, first + j));
  }
}

}  // namespace sb
