// The compressors that keep every value: none (fp32 as it is), fp16 and bf16 (rounded to nearest
// even). Their payloads add up element by element, so an allreduce carries them.
#include "collectives/compress/compressors.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/bf16_avx2.hpp"
#include "kernels/convert.hpp"
#include "kernels/f16c.hpp"
#include "kernels/vector_clones.hpp"

namespace sb {
namespace {

// out[i] += weight x sent[i] widened to fp32: the decoding of both 16-bit payloads, in vector
// clones (the fp16 widening is a select among cases, kernels/float16.hpp, which needs real blends).
SB_VECTOR_CLONES void add_widened(const float16* sent, size_t count, float weight, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] += weight * to_float(sent[i]);
}
SB_VECTOR_CLONES void add_widened(const bfloat16* sent, size_t count, float weight, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] += weight * to_float(sent[i]);
}

// out[i] = weight x sent[i] widened: the aggregate of a summed 16-bit payload, in one pass.
SB_VECTOR_CLONES void scale_widened(const float16* sent, size_t count, float weight, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = weight * to_float(sent[i]);
}
SB_VECTOR_CLONES void scale_widened(const bfloat16* sent, size_t count, float weight, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = weight * to_float(sent[i]);
}

class NoCompression final : public Compressor {
 public:
  std::string_view name() const override { return "none"; }
  bool lossless() const override { return true; }
  bool payload_is_the_values() const override { return true; }
  Carrier carrier() const override { return Carrier::allreduce; }
  size_t payload_bytes(size_t count) const override { return count * sizeof(float); }
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    std::memcpy(payload, values, count * sizeof(float));
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const float* sent = reinterpret_cast<const float*>(payload);
    for (size_t i = 0; i < count; ++i) out[i] += weight * sent[i];
  }
  void decompress(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const float* sent = reinterpret_cast<const float*>(payload);
    for (size_t i = 0; i < count; ++i) out[i] = weight * sent[i];
  }
};

// Error feedback through a 16-bit payload, a block at a time in L1: the residual's block takes
// the gradient, is rounded into the payload by the array conversion, and loses the rounded values
// widened back. The same arithmetic as the three calls of Compressor::compress_with_feedback
// (r + (-1 x w) is r - w exactly), in one pass over memory.
template <class Half>
void feedback_blockwise(float* residual, const float* gradient, size_t count, Half* payload) {
  constexpr size_t kBlock = 512;
  float sent[kBlock];
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t n = std::min(kBlock, count - start);
    float* r = residual + start;
    for (size_t i = 0; i < n; ++i) r[i] += gradient[start + i];
    if constexpr (std::is_same_v<Half, float16>) {
      to_float16_cpu(r, payload + start, n);
    } else {
      to_bfloat16_cpu(r, payload + start, n);
    }
    to_float_cpu(payload + start, sent, n);
    for (size_t i = 0; i < n; ++i) r[i] -= sent[i];
  }
}

#if defined(__x86_64__)
// The same, 8 values at a time in registers, where the CPU has the instructions: in cache the
// blocks' four loops cost more than the three passes they replace. fp16 narrows and widens with
// F16C; bf16 rounds in 32-bit lanes (kernels/bf16_avx2.hpp), whose upper halves are the widened
// values. Each returns how many it did (a multiple of 8); the blocks do the rest.
__attribute__((target("avx2,f16c"))) size_t feedback_fp16_f16c(float* residual, const float* gradient, size_t count,
                                                                float16* payload) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 corrected = _mm256_add_ps(_mm256_loadu_ps(residual + i), _mm256_loadu_ps(gradient + i));
    const __m128i half = f16c_narrow(corrected);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(payload + i), half);
    _mm256_storeu_ps(residual + i, _mm256_sub_ps(corrected, _mm256_cvtph_ps(half)));
  }
  return i;
}

__attribute__((target("avx2"))) size_t feedback_bf16_avx2(float* residual, const float* gradient, size_t count,
                                                           bfloat16* payload) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 corrected = _mm256_add_ps(_mm256_loadu_ps(residual + i), _mm256_loadu_ps(gradient + i));
    const __m256i lanes = bf16_round_lanes(corrected);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(payload + i),
                     _mm_packus_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1)));
    const __m256 sent = _mm256_castsi256_ps(_mm256_slli_epi32(lanes, 16));
    _mm256_storeu_ps(residual + i, _mm256_sub_ps(corrected, sent));
  }
  return i;
}
#endif

template <class Half>
void feedback(float* residual, const float* gradient, size_t count, Half* payload) {
  size_t done = 0;
#if defined(__x86_64__)
  if constexpr (std::is_same_v<Half, float16>) {
    if (has_f16c()) done = feedback_fp16_f16c(residual, gradient, count, payload);
  } else {
    if (has_avx2()) done = feedback_bf16_avx2(residual, gradient, count, payload);
  }
#endif
  feedback_blockwise(residual + done, gradient + done, count - done, payload + done);
}

template <class Half, DataType Type>
class HalfPrecision final : public Compressor {
 public:
  std::string_view name() const override { return Type == DataType::float16 ? "fp16" : "bf16"; }
  Carrier carrier() const override { return Carrier::allreduce; }
  DataType payload_type() const override { return Type; }
  size_t payload_bytes(size_t count) const override { return count * sizeof(Half); }
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    Half* out = reinterpret_cast<Half*>(payload);
    if constexpr (Type == DataType::float16) to_float16_cpu(values, out, count);
    else to_bfloat16_cpu(values, out, count);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    add_widened(reinterpret_cast<const Half*>(payload), count, weight, out);
  }
  void decompress(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    scale_widened(reinterpret_cast<const Half*>(payload), count, weight, out);
  }
  void compress_with_feedback(float* residual, const float* gradient, size_t count, uint64_t,
                              unsigned char* payload) override {
    feedback(residual, gradient, count, reinterpret_cast<Half*>(payload));
  }
};

}  // namespace

std::unique_ptr<Compressor> make_none_compressor() { return std::make_unique<NoCompression>(); }
std::unique_ptr<Compressor> make_fp16_compressor() { return std::make_unique<HalfPrecision<float16, DataType::float16>>(); }
std::unique_ptr<Compressor> make_bf16_compressor() { return std::make_unique<HalfPrecision<bfloat16, DataType::bfloat16>>(); }

}  // namespace sb
