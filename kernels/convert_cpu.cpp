#include "kernels/convert.hpp"

#include "kernels/bf16_avx2.hpp"
#include "kernels/f16c.hpp"

// Each loop is also compiled for AVX-512 and AVX2 (kernels/vector_clones.hpp): more lanes and real
// blends for the selects of the fp16 element functions.
#include "kernels/vector_clones.hpp"

namespace sb {

#if defined(__x86_64__)
// fp32 -> fp16 is a conversion the selects leave compute-bound (0.6 of memcpy), and fp16 -> fp32
// a quarter of memcpy's rate in cache: where the CPU has F16C its conversion instructions do them,
// with the element functions' bits (kernels/f16c.hpp). The tests compare the two bit for bit.
__attribute__((target("avx2,f16c"))) static void to_float16_f16c(const float* in, float16* out, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), f16c_narrow(_mm256_loadu_ps(in + i)));
  for (; i < count; ++i) out[i] = to_float16(in[i]);
}

__attribute__((target("avx2,f16c"))) static void to_float_f16c(const float16* in, float* out, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(out + i, f16c_widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < count; ++i) out[i] = to_float(in[i]);
}

// fp32 -> bf16: GCC's clone of the element loop runs at half of memcpy's rate in cache; the
// integer rounding written out for AVX2 (kernels/bf16_avx2.hpp) keeps up with it.
__attribute__((target("avx2"))) static void to_bfloat16_avx2(const float* in, bfloat16* out, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bf16_narrow(_mm256_loadu_ps(in + i)));
  for (; i < count; ++i) out[i] = to_bfloat16(in[i]);
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

SB_VECTOR_CLONES static void to_bfloat16_loop(const float* in, bfloat16* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_bfloat16(in[i]);
}

void to_bfloat16_cpu(const float* in, bfloat16* out, size_t count) {
#if defined(__x86_64__)
  if (has_avx2()) return to_bfloat16_avx2(in, out, count);
#endif
  to_bfloat16_loop(in, out, count);
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
