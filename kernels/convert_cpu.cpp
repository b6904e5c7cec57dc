#include "kernels/convert.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Each loop is also compiled for AVX-512 and AVX2 (kernels/vector_clones.hpp): more lanes and real
// blends for the selects of the fp16 element functions.
#include "kernels/vector_clones.hpp"

namespace sb {

#if defined(__x86_64__)
static bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}

// fp32 -> fp16 is a conversion the selects leave compute-bound (0.6 of memcpy), so
// where the CPU has F16C its conversion instruction does it: IEEE round to nearest even, the same
// results as to_float16 for every input but NaN, which is then set to to_float16's quiet NaN
// (sign | 0x7e00) whatever its payload. The tests compare the two bit for bit.
__attribute__((target("avx2,f16c"))) static void to_float16_f16c(const float* in, float16* out, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    __m128i half = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    const __m128i quiet = _mm_or_si128(_mm_and_si128(half, _mm_set1_epi16(static_cast<short>(0x8000))), _mm_set1_epi16(0x7e00));
    half = _mm_blendv_epi8(half, quiet, nan16);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), half);
  }
  for (; i < count; ++i) out[i] = to_float16(in[i]);
}

// fp16 -> fp32 likewise (the select loop does a quarter of memcpy's rate in cache). The conversion
// is exact, so only NaN can differ: F16C quiets a signalling NaN, to_float keeps its payload as
// it is; NaN lanes take to_float's bits.
__attribute__((target("avx2,f16c"))) static void to_float_f16c(const float16* in, float* out, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m256 x = _mm256_cvtph_ps(half);
    const __m256i h = _mm256_cvtepu16_epi32(half);
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
    const __m256i payload = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x3ff)), 13);
    const __m256 nan_bits =
        _mm256_castsi256_ps(_mm256_or_si256(_mm256_or_si256(sign, payload), _mm256_set1_epi32(0x7f800000)));
    _mm256_storeu_ps(out + i, _mm256_blendv_ps(x, nan_bits, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
  }
  for (; i < count; ++i) out[i] = to_float(in[i]);
}
#endif

SB_VECTOR_CLONES static void to_float16_loop(const float* in, float16* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_float16(in[i]);
}

void to_float16_cpu(const float* in, float16* out, size_t count) {
#if defined(__x86_64__)
  if (has_f16c()) return to_float16_f16c(in, out, count);
#endif
  to_float16_loop(in, out, count);
}

SB_VECTOR_CLONES void to_bfloat16_cpu(const float* in, bfloat16* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_bfloat16(in[i]);
}

SB_VECTOR_CLONES static void to_float_loop(const float16* in, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_float(in[i]);
}

void to_float_cpu(const float16* in, float* out, size_t count) {
#if defined(__x86_64__)
  if (has_f16c()) return to_float_f16c(in, out, count);
#endif
  to_float_loop(in, out, count);
}

SB_VECTOR_CLONES void to_float_cpu(const bfloat16* in, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_float(in[i]);
}

}  // namespace sb
