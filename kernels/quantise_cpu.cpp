#include "kernels/quantise.hpp"

#include "kernels/vector_clones.hpp"

namespace sb {

// One run of values under one unit, from position `first` on: the hash and the rounding
// vectorise together on a 32-bit counter (a 64-bit one costs lane shuffles to narrow), in chunks
// of 2^31 so that it never overflows.
SB_VECTOR_CLONES static void levels_of_run(const float* values, size_t count, size_t first, float unit_inverse, float s,
                                           uint32_t key32, int8_t* level) {
  constexpr size_t kChunk = size_t{1} << 31;
  for (size_t begin = 0; begin < count; begin += kChunk) {
    const uint32_t n = static_cast<uint32_t>(count - begin < kChunk ? count - begin : kChunk);
    const uint32_t counter = static_cast<uint32_t>(first + begin);  // the position's low 32 bits
    const float* x = values + begin;
    int8_t* out = level + begin;
    for (uint32_t j = 0; j < n; ++j) out[j] = stochastic_level(x[j], unit_inverse, s, stochastic_uniform(key32, counter + j));
  }
}

void stochastic_levels_cpu(const float* values, size_t count, size_t bucket, const float* scales, float s, uint64_t key,
                           int8_t* level, size_t first) {
  const uint32_t key32 = quantise_key(key);
  const size_t span = scale_span(bucket, count);
  for (size_t begin = 0, b = 0; begin < count; begin += span, ++b) {
    const size_t n = count - begin < span ? count - begin : span;
    levels_of_run(values + begin, n, first + begin, unit_inverse_of(scales[b], s), s, key32, level + begin);
  }
}

}  // namespace sb
