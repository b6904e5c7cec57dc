// The quantisers: every value is sent, in a few bits, with one fp32 scale per tensor.
//   efsign   sign bits and the mean magnitude (the scaled sign of EF-signSGD; run it with error
//            feedback, which is what makes it converge);
//   sign     the same payload aggregated by majority vote (signSGD, Bernstein et al. 2018): each
//            value becomes the sign most ranks sent (0 on a tie) times the ranks' mean magnitude;
//   qsgd     s levels of |x| / ||x||_2, stochastically rounded so that the decoding is unbiased,
//            one signed byte per value (s <= 127);
//   terngrad -1, 0 or +1 times max |x|, +-1 with probability |x| / max |x| (unbiased);
//   onebit   1-bit SGD (Seide et al. 2014): one bit per value, decoded per chunk of 512 values to
//            the mean of the chunk's non-negative values or to the mean of its negative ones
//            (with error feedback, as the paper runs it).
// Each rank quantises differently, so the payloads do not add up: an allgather carries them.
// The stochastic rounding draws from the rank's own stream (params.stream), varied by the step.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "collectives/compress/compressors.hpp"
#include "kernels/random.hpp"

namespace sb {
namespace {

float read_scale(const unsigned char* payload) {
  float scale;
  std::memcpy(&scale, payload, sizeof scale);
  return scale;
}
void write_scale(unsigned char* payload, float scale) { std::memcpy(payload, &scale, sizeof scale); }

class ScaledSign final : public Compressor {
 public:
  explicit ScaledSign(bool majority) : majority_(majority) {}
  std::string_view name() const override { return majority_ ? "sign" : "efsign"; }
  Carrier carrier() const override { return Carrier::allgather; }
  size_t payload_bytes(size_t count) const override { return sizeof(float) + (count + 7) / 8; }
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    double magnitude = 0;
    for (size_t i = 0; i < count; ++i) magnitude += std::fabs(values[i]);
    write_scale(payload, count ? static_cast<float>(magnitude / static_cast<double>(count)) : 0.0f);
    unsigned char* bits = payload + sizeof(float);
    std::memset(bits, 0, (count + 7) / 8);
    for (size_t i = 0; i < count; ++i)
      if (std::signbit(values[i])) bits[i / 8] = static_cast<unsigned char>(bits[i / 8] | (1u << (i % 8)));
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out) const override {
    const float scale = read_scale(payload);
    const unsigned char* bits = payload + sizeof(float);
    for (size_t i = 0; i < count; ++i) out[i] += (bits[i / 8] >> (i % 8)) & 1u ? -scale : scale;
  }
  void combine(const unsigned char* payloads, size_t count, int nranks, float* out) override {
    if (!majority_) return Compressor::combine(payloads, count, nranks, out);
    const size_t bytes = payload_bytes(count);
    double scale = 0;
    for (int r = 0; r < nranks; ++r) scale += read_scale(payloads + static_cast<size_t>(r) * bytes);
    const float magnitude = static_cast<float>(scale / nranks);
    std::vector<int> votes(count, 0);
    for (int r = 0; r < nranks; ++r) {
      const unsigned char* bits = payloads + static_cast<size_t>(r) * bytes + sizeof(float);
      for (size_t i = 0; i < count; ++i) votes[i] += (bits[i / 8] >> (i % 8)) & 1u ? -1 : 1;
    }
    for (size_t i = 0; i < count; ++i) out[i] = votes[i] > 0 ? magnitude : votes[i] < 0 ? -magnitude : 0.0f;
  }

 private:
  bool majority_;
};

class OneBit final : public Compressor {
 public:
  static constexpr size_t kChunk = 512;
  std::string_view name() const override { return "onebit"; }
  Carrier carrier() const override { return Carrier::allgather; }
  // Two means per chunk, then the bits.
  size_t payload_bytes(size_t count) const override { return chunks(count) * 2 * sizeof(float) + (count + 7) / 8; }
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    unsigned char* bits = payload + chunks(count) * 2 * sizeof(float);
    std::memset(bits, 0, (count + 7) / 8);
    for (size_t c = 0; c < chunks(count); ++c) {
      double positive = 0, negative = 0;
      size_t negatives = 0;
      const size_t end = std::min(count, (c + 1) * kChunk);
      for (size_t i = c * kChunk; i < end; ++i) {
        if (values[i] < 0) {
          negative += values[i];
          ++negatives;
          bits[i / 8] = static_cast<unsigned char>(bits[i / 8] | (1u << (i % 8)));
        } else {
          positive += values[i];
        }
      }
      const size_t positives = end - c * kChunk - negatives;
      write_scale(payload + 2 * c * sizeof(float), positives ? static_cast<float>(positive / static_cast<double>(positives)) : 0.0f);
      write_scale(payload + (2 * c + 1) * sizeof(float),
                  negatives ? static_cast<float>(negative / static_cast<double>(negatives)) : 0.0f);
    }
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out) const override {
    const unsigned char* bits = payload + chunks(count) * 2 * sizeof(float);
    for (size_t c = 0; c < chunks(count); ++c) {
      const float positive = read_scale(payload + 2 * c * sizeof(float));
      const float negative = read_scale(payload + (2 * c + 1) * sizeof(float));
      const size_t end = std::min(count, (c + 1) * kChunk);
      for (size_t i = c * kChunk; i < end; ++i) out[i] += (bits[i / 8] >> (i % 8)) & 1u ? negative : positive;
    }
  }

 private:
  static size_t chunks(size_t count) { return (count + kChunk - 1) / kChunk; }
};

// One signed byte per value and a scale: the layout QSGD and TernGrad share.
class ByteQuantiser : public Compressor {
 public:
  explicit ByteQuantiser(uint64_t stream) : stream_(stream) {}
  Carrier carrier() const override { return Carrier::allgather; }
  size_t payload_bytes(size_t count) const override { return sizeof(float) + count; }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out) const override {
    const float unit = read_scale(payload) / static_cast<float>(levels());
    const int8_t* level = reinterpret_cast<const int8_t*>(payload + sizeof(float));
    for (size_t i = 0; i < count; ++i) out[i] += unit * static_cast<float>(level[i]);
  }

 protected:
  virtual int levels() const = 0;
  // Writes scale and levels: |level| = floor(|x| / scale * s + u), u uniform in [0, 1).
  void quantise(const float* values, size_t count, uint64_t step, float scale, unsigned char* payload) const {
    write_scale(payload, scale);
    int8_t* level = reinterpret_cast<int8_t*>(payload + sizeof(float));
    const uint64_t key = random_key(stream_, static_cast<uint64_t>(levels()), step);
    const float s = static_cast<float>(levels());
    for (size_t i = 0; i < count; ++i) {
      const float ratio = scale > 0 ? std::fabs(values[i]) / scale : 0.0f;
      const float q = std::min(std::floor(ratio * s + random_unit(key, i)), s);
      level[i] = static_cast<int8_t>(std::signbit(values[i]) ? -q : q);
    }
  }

 private:
  uint64_t stream_;
};

class Qsgd final : public ByteQuantiser {
 public:
  Qsgd(int levels, uint64_t stream) : ByteQuantiser(stream), levels_(levels) {}
  std::string_view name() const override { return "qsgd"; }
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload) override {
    double squares = 0;
    for (size_t i = 0; i < count; ++i) squares += static_cast<double>(values[i]) * values[i];
    quantise(values, count, step, static_cast<float>(std::sqrt(squares)), payload);
  }

 private:
  int levels() const override { return levels_; }
  int levels_;
};

class TernGrad final : public ByteQuantiser {
 public:
  explicit TernGrad(uint64_t stream) : ByteQuantiser(stream) {}
  std::string_view name() const override { return "terngrad"; }
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload) override {
    float largest = 0;
    for (size_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(values[i]));
    quantise(values, count, step, largest, payload);
  }

 private:
  int levels() const override { return 1; }
};

}  // namespace

std::unique_ptr<Compressor> make_sign_compressor() { return std::make_unique<ScaledSign>(true); }

std::unique_ptr<Compressor> make_efsign_compressor() { return std::make_unique<ScaledSign>(false); }
std::unique_ptr<Compressor> make_onebit_compressor() { return std::make_unique<OneBit>(); }
std::unique_ptr<Compressor> make_qsgd_compressor(const CompressorParams& params) {
  return std::make_unique<Qsgd>(params.levels, params.stream);
}
std::unique_ptr<Compressor> make_terngrad_compressor(const CompressorParams& params) {
  return std::make_unique<TernGrad>(params.stream);
}

}  // namespace sb
