#pragma once
// Stochastic rounding to levels, as QSGD and TernGrad quantise: level[i] = sign(x) min(floor(
// |x| unit_inverse + u_i), s) with unit_inverse = s / scale (0 for a zero scale) and u_i uniform
// in [0, 1), an unbiased rounding of x / scale * s to an integer in [-s, s]. The uniforms come
// from (key, i) alone (kernels/random.hpp), so the CPU loop (quantise_cpu.cpp, which draws a block
// at a time so that it vectorises) and the CUDA kernel (quantise_cuda.cu, a thread per value)
// give the same levels bit for bit.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/host_device.hpp"
#include "kernels/random.hpp"

#if SB_HAVE_CUDA
struct CUstream_st;  // cudaStream_t, without the CUDA headers
#endif

namespace sb {

// One 64-bit draw serves two values: those at j and j + half of a block of kQuantiseBlock values
// (half = ceil(values in the block / 2)), taking its top and its middle 24 bits.
inline constexpr size_t kQuantiseBlock = 512;

SB_HD float uniform_from_bits(uint64_t bits, bool top) {
  // 24-bit integers: exact through int32, which converts to float in every vector ISA.
  const uint32_t v = top ? static_cast<uint32_t>(bits >> 40) : static_cast<uint32_t>((bits >> 16) & 0xffffffu);
  return static_cast<float>(static_cast<int32_t>(v)) * (1.0f / 16777216.0f);
}

// u_i of value i of count.
SB_HD float stochastic_uniform(uint64_t key, size_t i, size_t count) {
  const size_t begin = i / kQuantiseBlock * kQuantiseBlock;
  const size_t n = count - begin < kQuantiseBlock ? count - begin : kQuantiseBlock;
  const size_t half = (n + 1) / 2, local = i - begin;
  const bool top = local < half;
  return uniform_from_bits(random_bits(key, begin / 2 + (top ? local : local - half)), top);
}

SB_HD int8_t stochastic_level(float x, float unit_inverse, float s, float u) {
  // The argument is >= 0, so truncation is floor.
  const float q = static_cast<float>(static_cast<int32_t>(fabsf(x) * unit_inverse + u));
  const float clamped = s < q ? s : q;
  return static_cast<int8_t>(x < 0 ? -clamped : clamped);
}

void stochastic_levels_cpu(const float* values, size_t count, float unit_inverse, float s, uint64_t key, int8_t* level);
#if SB_HAVE_CUDA
void stochastic_levels_cuda(const float* values, size_t count, float unit_inverse, float s, uint64_t key, int8_t* level,
                            CUstream_st* stream);
#endif

}  // namespace sb
