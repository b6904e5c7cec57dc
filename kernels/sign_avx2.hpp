#pragma once
// x86 AVX2 forms of the sign payloads' hot loops (collectives/compress/quantised_compressors.cpp),
// 8 values at a time: packing sign bits, which is one movemask; adding a figure chosen by each
// bit, where a byte's bits become 8 lane masks that select it; and 1-bit SGD's chunk sums. GCC
// leaves the element loops at a byte or a value at a time. Each returns how many values it did (a multiple of 8);
// the portable loops do the rest. Callers check has_avx2() first.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstddef>

#include "kernels/cpu_features.hpp"

namespace sb {

// bits[j] = the sign bits of values 8j .. 8j + 7 (bit k: value 8j + k's, so -0 counts as negative).
__attribute__((target("avx2"))) inline size_t pack_signs_avx2(const float* values, size_t count, unsigned char* bits) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    bits[i / 8] = static_cast<unsigned char>(_mm256_movemask_ps(_mm256_loadu_ps(values + i)));
  return i;
}

// out[i] += bit i ? negative : positive, for i from begin (a multiple of 8) towards end.
__attribute__((target("avx2"))) inline size_t add_by_sign_avx2(const unsigned char* bits, size_t begin, size_t end,
                                                               float positive, float negative, float* out) {
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 if_clear = _mm256_set1_ps(positive), if_set = _mm256_set1_ps(negative);
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256i byte = _mm256_set1_epi32(bits[i / 8]);
    const __m256 set = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(byte, lane_bit), lane_bit));
    const __m256 figure = _mm256_blendv_ps(if_clear, if_set, set);
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(out + i), figure));
  }
  return i - begin;
}

// 1-bit SGD's chunk lanes over `count` values (a multiple of 8), with the portable loop's
// arithmetic: bit k of byte j set where value 8j + k < 0 (not -0, not NaN: an ordered compare);
// lane k of `negative` and `positive` (8 doubles each, added to) gains x below and x (1 - below)
// for values k, k + 8, ... in order, each product exact. Returns how many values are negative.
__attribute__((target("avx2"))) inline size_t onebit_lanes_avx2(const float* values, size_t count, unsigned char* bits,
                                                                double* positive, double* negative) {
  __m256d positive_low = _mm256_loadu_pd(positive), positive_high = _mm256_loadu_pd(positive + 4);
  __m256d negative_low = _mm256_loadu_pd(negative), negative_high = _mm256_loadu_pd(negative + 4);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256d one_wide = _mm256_set1_pd(1.0);
  size_t negatives = 0;
  for (size_t i = 0; i < count; i += 8) {
    const __m256 x = _mm256_loadu_ps(values + i);
    const __m256 below = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    const int byte = _mm256_movemask_ps(below);
    bits[i / 8] = static_cast<unsigned char>(byte);
    negatives += static_cast<size_t>(__builtin_popcount(static_cast<unsigned>(byte)));
    const __m256 below_one = _mm256_and_ps(below, one);
    const __m256d x_low = _mm256_cvtps_pd(_mm256_castps256_ps128(x)), x_high = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
    const __m256d b_low = _mm256_cvtps_pd(_mm256_castps256_ps128(below_one)),
                  b_high = _mm256_cvtps_pd(_mm256_extractf128_ps(below_one, 1));
    negative_low = _mm256_add_pd(negative_low, _mm256_mul_pd(x_low, b_low));
    negative_high = _mm256_add_pd(negative_high, _mm256_mul_pd(x_high, b_high));
    positive_low = _mm256_add_pd(positive_low, _mm256_mul_pd(x_low, _mm256_sub_pd(one_wide, b_low)));
    positive_high = _mm256_add_pd(positive_high, _mm256_mul_pd(x_high, _mm256_sub_pd(one_wide, b_high)));
  }
  _mm256_storeu_pd(positive, positive_low);
  _mm256_storeu_pd(positive + 4, positive_high);
  _mm256_storeu_pd(negative, negative_low);
  _mm256_storeu_pd(negative + 4, negative_high);
  return negatives;
}

}  // namespace sb

#endif
