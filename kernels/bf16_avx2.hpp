#pragma once
// x86 AVX2 conversions between bfloat16 and fp32, 8 values at a time, with the element
// functions' bits (kernels/float16.hpp) for every input, NaN included, for the host loops that use
// them (convert_cpu.cpp, reduce_cpu.cpp). bf16 is fp32's upper half, so both ways are integer
// work: a shift to widen, and to narrow the element function's round-to-nearest-even add and its
// NaN select, lane by lane. GCC leaves the element loop at half of memcpy's rate in cache. Callers
// check has_avx2() first and carry the same target attribute, so that these inline into them.
#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu_features.hpp"

namespace sb {

// 8 bf16 to fp32, as to_float: the bits move to the upper half, exactly (a NaN keeps its payload).
__attribute__((target("avx2"))) inline __m256 bf16_widen(__m128i bf16) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bf16), 16));
}

// 8 floats rounded to bf16 as to_bfloat16 does, each result in the low half of its 32-bit lane:
// add 0x7fff and the kept half's lowest bit, keep the upper half (round to nearest even; the
// largest finite values round to inf); a NaN keeps its upper half with the quiet bit set, so that
// it never rounds to inf.
__attribute__((target("avx2"))) inline __m256i bf16_round_lanes(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i upper = _mm256_srli_epi32(u, 16);
  const __m256i lowest_kept = _mm256_and_si256(upper, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lowest_kept), 16);
  const __m256i quiet_nan = _mm256_or_si256(upper, _mm256_set1_epi32(0x40));
  // |x| > inf's bits: both sides are below 2^31, so the signed compare is the unsigned one.
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, quiet_nan, nan);
}

// 8 floats to bf16, as to_bfloat16.
__attribute__((target("avx2"))) inline __m128i bf16_narrow(__m256 x) {
  const __m256i bits = bf16_round_lanes(x);  // each lane < 2^16: the unsigned saturation keeps it
  return _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
}

// 16 at a time without crossing 128-bit lanes: unpacking with zeros below widens 16 bf16 into two
// vectors of 8 floats, {0-3, 8-11} and {4-7, 12-15}, and packing their rounded lanes puts the 16
// back in order. Element-wise work between the two keeps that order.
struct Bf16Pair {
  __m256 low, high;
};

__attribute__((target("avx2"))) inline Bf16Pair bf16_widen16(__m256i bf16) {
  const __m256i zero = _mm256_setzero_si256();
  return {_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, bf16)),
          _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, bf16))};
}

__attribute__((target("avx2"))) inline __m256i bf16_narrow16(Bf16Pair x) {
  return _mm256_packus_epi32(bf16_round_lanes(x.low), bf16_round_lanes(x.high));
}

}  // namespace sb
#endif
