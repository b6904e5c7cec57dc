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

SB_HD float16 to_float16(float f) {
  uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u >= 0x7f800000u)  // inf stays inf, NaN stays a (quiet) NaN
    return {static_cast<uint16_t>(sign | 0x7c00u | (u > 0x7f800000u ? 0x0200u : 0u))};
  if (u >= 0x47800000u)  // >= 65536: beyond the largest finite half, whatever the rounding
    return {static_cast<uint16_t>(sign | 0x7c00u)};
  if (u < 0x38800000u) {
    // Below 2^-14 the result is subnormal: adding 0.5f lines the half's 10 mantissa bits up with
    // the low bits of the float, and the FPU's own round-to-nearest-even does the rounding.
    const float shifted = bits_float(u) + 0.5f;
    return {static_cast<uint16_t>(sign | (float_bits(shifted) - 0x3f000000u))};
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even. A
  // carry out of the mantissa moves into the exponent, which also turns 65520.. into inf.
  const uint32_t odd = (u >> 13) & 1u;
  u += 0xc8000000u + 0x0fffu + odd;  // 0xc8000000 = (15 - 127) << 23, modulo 2^32
  return {static_cast<uint16_t>(sign | (u >> 13))};
}

SB_HD float to_float(float16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in fp32
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return bits_float(sign | float_bits(magnitude));
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

SB_HD bfloat16 to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: keep it a quiet NaN, never round it to inf
    return {static_cast<uint16_t>((u >> 16) | 0x0040u)};
  const uint32_t odd = (u >> 16) & 1u;
  return {static_cast<uint16_t>((u + 0x7fffu + odd) >> 16)};
}

SB_HD float to_float(bfloat16 b) { return bits_float(static_cast<uint32_t>(b.bits) << 16); }

}  // namespace sb
