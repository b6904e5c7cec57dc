#pragma once
// x86 AVX2 form of TernGrad's one pass of moments (collectives/compress/quantised_compressors.cpp):
// sums, sums of squares (in double) and largest magnitudes in eight lanes. GCC leaves the portable
// loop, whose lanes widen floats to doubles, mostly scalar, with its lanes spilled to the stack.
// Same arithmetic as the portable loop, lane for lane: lane k takes values 8j + k in order, each
// square a multiply and then an add (no FMA, as in every clone), each max the portable
// std::max's (a NaN passed over). Callers check has_avx2() first.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstddef>

#include "kernels/cpu_features.hpp"

namespace sb {

// sums[k] += x, squares[k] += double(x) x, largest[k] = max(largest[k], |x|) for x = values[8j + k],
// over the whole groups of 8 of `count` values; returns how many values that was.
__attribute__((target("avx2"))) inline size_t add_moment_lanes_avx2(const float* values, size_t count, double sums[8],
                                                                   double squares[8], float largest[8]) {
  __m256d sum_low = _mm256_loadu_pd(sums), sum_high = _mm256_loadu_pd(sums + 4);
  __m256d square_low = _mm256_loadu_pd(squares), square_high = _mm256_loadu_pd(squares + 4);
  __m256 top = _mm256_loadu_ps(largest);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_loadu_ps(values + i);
    const __m256d low = _mm256_cvtps_pd(_mm256_castps256_ps128(x)), high = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
    sum_low = _mm256_add_pd(sum_low, low);
    sum_high = _mm256_add_pd(sum_high, high);
    square_low = _mm256_add_pd(square_low, _mm256_mul_pd(low, low));
    square_high = _mm256_add_pd(square_high, _mm256_mul_pd(high, high));
    // max(|x|, top) keeps top unless |x| > top, as std::max(top, |x|) does: a NaN never wins.
    top = _mm256_max_ps(_mm256_and_ps(x, magnitude), top);
  }
  _mm256_storeu_pd(sums, sum_low);
  _mm256_storeu_pd(sums + 4, sum_high);
  _mm256_storeu_pd(squares, square_low);
  _mm256_storeu_pd(squares + 4, square_high);
  _mm256_storeu_ps(largest, top);
  return i;
}

}  // namespace sb
#endif
