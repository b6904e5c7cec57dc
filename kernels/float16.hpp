#pragma once
// Storage types for IEEE binary16 (fp16) and bfloat16, with conversions to and from fp32 that
// round to nearest even. They are plain 16-bit values so that they can live in MPI buffers,
// HDF5 datasets and CUDA kernels alike; arithmetic happens in fp32.
#include <cstdint>
#include <cstring>

#include "kernels/host_device.hpp"

namespace sb {

struct float16 {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

SB_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
SB_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// The conversions are written without branches (every case computed, the right one selected) so
// that the CPU loops over arrays vectorise; each case says where it applies.
SB_HD float16 to_float16(float f) {
  const uint32_t bits = float_bits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t u = bits & 0x7fffffffu;
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even. A
  // carry out of the mantissa moves into the exponent, which also turns 65520.. into inf.
  // 0xc8000000 = (15 - 127) << 23, modulo 2^32.
  const uint32_t normal = (u + 0xc8000000u + 0x0fffu + ((u >> 13) & 1u)) >> 13;
  // Below 2^-14 the result is subnormal: adding 0.5f lines the half's 10 mantissa bits up with
  // the low bits of the float, and the FPU's own round-to-nearest-even does the rounding.
  const uint32_t subnormal = float_bits(bits_float(u) + 0.5f) - 0x3f000000u;
  // inf stays inf, NaN stays a (quiet) NaN.
  const uint32_t inf_or_nan = 0x7c00u | (u > 0x7f800000u ? 0x0200u : 0u);
  uint32_t half = u < 0x38800000u ? subnormal : normal;
  half = u >= 0x47800000u ? 0x7c00u : half;  // >= 65536: beyond the largest finite half, whatever the rounding
  half = u >= 0x7f800000u ? inf_or_nan : half;
  return {static_cast<uint16_t>(sign | half)};
}

SB_HD float to_float(float16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const uint32_t mantissa = h.bits & 0x3ffu;
  // Zero or subnormal: mantissa * 2^-24, exact in fp32.
  const uint32_t subnormal = sign | float_bits(static_cast<float>(mantissa) * 5.9604644775390625e-8f);
  const uint32_t inf_or_nan = sign | 0x7f800000u | (mantissa << 13);
  const uint32_t normal = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  return bits_float(exponent == 0 ? subnormal : exponent == 31 ? inf_or_nan : normal);
}

SB_HD bfloat16 to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x0040u;  // NaN stays a quiet NaN, never rounds to inf
  return {static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded)};
}

SB_HD float to_float(bfloat16 b) { return bits_float(static_cast<uint32_t>(b.bits) << 16); }

}  // namespace sb
