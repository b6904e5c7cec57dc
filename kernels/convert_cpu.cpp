#include "kernels/convert.hpp"

// Each loop is also compiled for AVX-512 and AVX2 and the widest the CPU has is picked at run time:
// more lanes and real blends for the selects of the fp16 element functions. Same arithmetic.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define SB_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SB_VECTOR_CLONES
#endif

namespace sb {

SB_VECTOR_CLONES void to_float16_cpu(const float* in, float16* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_float16(in[i]);
}

SB_VECTOR_CLONES void to_bfloat16_cpu(const float* in, bfloat16* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_bfloat16(in[i]);
}

SB_VECTOR_CLONES void to_float_cpu(const float16* in, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_float(in[i]);
}

SB_VECTOR_CLONES void to_float_cpu(const bfloat16* in, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = to_float(in[i]);
}

}  // namespace sb
