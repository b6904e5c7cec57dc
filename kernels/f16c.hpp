#pragma once
// x86 F16C conversions of 8 values at a time that give the element functions' bits
// (kernels/float16.hpp) for every input, NaN included, for the host loops that use them
// (convert_cpu.cpp, reduce_cpu.cpp). Callers check has_f16c() first and carry the same target
// attribute, so that these inline into them.
#if defined(__x86_64__)
#include <immintrin.h>

namespace sb {

// Whether this CPU has AVX2 and F16C (checked once).
inline bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}

// 8 halves to fp32, as to_float: the conversion is exact, so only NaN can differ. F16C quiets a
// signalling NaN; to_float keeps the payload as it is, so NaN lanes take its bits.
__attribute__((target("avx2,f16c"))) inline __m256 f16c_widen(__m128i half) {
  const __m256 x = _mm256_cvtph_ps(half);
  const __m256i h = _mm256_cvtepu16_epi32(half);
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
  const __m256i payload = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x3ff)), 13);
  const __m256 nan_bits =
      _mm256_castsi256_ps(_mm256_or_si256(_mm256_or_si256(sign, payload), _mm256_set1_epi32(0x7f800000)));
  return _mm256_blendv_ps(x, nan_bits, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// 8 floats to halves, as to_float16: IEEE round to nearest even, the same for every input but
// NaN, which becomes to_float16's quiet NaN (sign | 0x7e00) whatever its payload.
__attribute__((target("avx2,f16c"))) inline __m128i f16c_narrow(__m256 x) {
  const __m128i half = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
  const __m128i quiet = _mm_or_si128(_mm_and_si128(half, _mm_set1_epi16(static_cast<short>(0x8000))), _mm_set1_epi16(0x7e00));
  return _mm_blendv_epi8(half, quiet, nan16);
}

}  // namespace sb
#endif
