#include "kernels/reduce.hpp"

#include <algorithm>
#include <type_traits>

#include "kernels/bf16_avx2.hpp"
#include "kernels/convert.hpp"
#include "kernels/f16c.hpp"
#include "kernels/vector_clones.hpp"

namespace sb {
namespace {

template <class T>
constexpr bool is_16bit_float = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

void narrow(const float* in, float16* out, size_t count) { to_float16_cpu(in, out, count); }
void narrow(const float* in, bfloat16* out, size_t count) { to_bfloat16_cpu(in, out, count); }

// fp16 and bf16, a block at a time: both inputs widened into fp32 scratch by the array
// conversions (F16C where the CPU has it), combined there, and rounded back. That is combine()'s
// own arithmetic on 16-bit values (widen exactly, combine in fp32, round once), bit for bit but
// for which of two NaN operands passes on (IEEE leaves it open, and the compiler's operand order
// decides it in the element function too), at vector speed: the element loop, which widens and
// rounds through selects, stays scalar (fp16 sums at 1 GB/s, 3% of memcpy in cache). `out` may
// be `a` or `b`: a block is read before it is written.
template <class Half, class Combine>
void blockwise_16bit(Half* out, const Half* a, const Half* b, size_t count, Combine combine_floats) {
  constexpr size_t kBlock = 512;  // two 2 KiB scratch blocks, in L1
  float x[kBlock], y[kBlock];
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t n = std::min(kBlock, count - start);
    to_float_cpu(a + start, x, n);
    if (b) to_float_cpu(b + start, y, n);
    combine_floats(x, y, n);
    narrow(x, out + start, n);
  }
}

#if defined(__x86_64__)
// fp16 sums, gradients' common case, in one pass where the CPU has F16C: widen 8 of each, add,
// round, with the element functions' bits (NaN pairs as above). The widening is F16C's own,
// without f16c_widen's NaN fix-up: a NaN operand makes the sum a NaN of the same sign either way,
// and f16c_narrow turns every NaN into sign | 0x7e00. Returns how many it did (a multiple of 8);
// the rest goes the block way.
__attribute__((target("avx2,f16c"))) size_t sum_fp16_f16c(float16* out, const float16* a, const float16* b,
                                                           size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), f16c_narrow(_mm256_add_ps(x, y)));
  }
  return i;
}

// bf16 sums the same way with AVX2 alone: widening is a shift, and bf16_narrow rounds as
// to_bfloat16 does (a NaN sum keeps its upper half, quieted). The block way runs at a third of
// memcpy's rate in cache. Returns how many it did (a multiple of 16).
__attribute__((target("avx2"))) size_t sum_bf16_avx2(bfloat16* out, const bfloat16* a, const bfloat16* b,
                                                     size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const Bf16Pair x = bf16_widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)));
    const Bf16Pair y = bf16_widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    const Bf16Pair sum = {_mm256_add_ps(x.low, y.low), _mm256_add_ps(x.high, y.high)};
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bf16_narrow16(sum));
  }
  return i;
}
#endif

}  // namespace

SB_VECTOR_CLONES void reduce_into_cpu(void* accumulator, const void* input, size_t count, DataType type,
                                      RedOp op) {
  reduce_cpu(accumulator, accumulator, input, count, type, op);
}

SB_VECTOR_CLONES void reduce_cpu(void* out, const void* a, const void* b, size_t count, DataType type, RedOp op) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* result = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    dispatch_op(op, [&](auto op_tag) {
      if constexpr (is_16bit_float<T>) {
        size_t done = 0;
#if defined(__x86_64__)
        constexpr bool sum = op_tag.value == RedOp::sum || op_tag.value == RedOp::avg;
        if constexpr (sum && std::is_same_v<T, float16>)
          if (has_f16c()) done = sum_fp16_f16c(result, x, y, count);
        if constexpr (sum && std::is_same_v<T, bfloat16>)
          if (has_avx2()) done = sum_bf16_avx2(result, x, y, count);
#endif
        blockwise_16bit(result + done, x + done, y + done, count - done, [&](float* p, const float* q, size_t n) {
          for (size_t i = 0; i < n; ++i) p[i] = combine(op_tag.value, p[i], q[i]);
        });
      } else {
        for (size_t i = 0; i < count; ++i) result[i] = combine(op_tag.value, x[i], y[i]);
      }
    });
  });
}

SB_VECTOR_CLONES void divide_cpu(void* buffer, size_t count, DataType type, int divisor) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(buffer);
    if constexpr (is_16bit_float<T>) {
      const float d = static_cast<float>(divisor);
      blockwise_16bit(values, values, static_cast<const T*>(nullptr), count, [&](float* p, const float*, size_t n) {
        for (size_t i = 0; i < n; ++i) p[i] = p[i] / d;
      });
    } else {
      for (size_t i = 0; i < count; ++i) values[i] = divide(values[i], divisor);
    }
  });
}

}  // namespace sb
