// The compressors that keep every value: none (fp32 as it is), fp16 and bf16 (rounded to nearest
// even). Their payloads add up element by element, so an allreduce carries them.
#include "collectives/compress/compressors.hpp"

#include <cstring>

#include "kernels/convert.hpp"
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
};

}  // namespace

std::unique_ptr<Compressor> make_none_compressor() { return std::make_unique<NoCompression>(); }
std::unique_ptr<Compressor> make_fp16_compressor() { return std::make_unique<HalfPrecision<float16, DataType::float16>>(); }
std::unique_ptr<Compressor> make_bf16_compressor() { return std::make_unique<HalfPrecision<bfloat16, DataType::bfloat16>>(); }

}  // namespace sb
