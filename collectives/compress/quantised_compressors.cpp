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

// The loops below work a byte of bits (8 values) at a time with independent partial results, so
// that the compiler can keep them in vector registers instead of a chain of dependent operations.

// Mean |x|, in eight double partial sums.
double mean_magnitude(const float* values, size_t count) {
  double lanes[8] = {};
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int k = 0; k < 8; ++k) lanes[k] += std::fabs(values[i + k]);
  double sum = 0;
  for (; i < count; ++i) sum += std::fabs(values[i]);
  for (double lane : lanes) sum += lane;
  return count ? sum / static_cast<double>(count) : 0.0;
}

// Bit k of byte j: the sign bit of value 8j + k (so -0 counts as negative).
void pack_signs(const float* values, size_t count, unsigned char* bits) {
  for (size_t j = 0; j < (count + 7) / 8; ++j) {
    unsigned byte = 0;
    for (size_t k = 0; k < 8 && 8 * j + k < count; ++k) {
      uint32_t word;
      std::memcpy(&word, values + 8 * j + k, sizeof word);
      byte |= (word >> 31) << k;
    }
    bits[j] = static_cast<unsigned char>(byte);
  }
}

// out[i] += bit i ? negative : positive, for i in [begin, end) with begin a multiple of 8.
void add_by_sign(const unsigned char* bits, size_t begin, size_t end, float positive, float negative, float* out) {
  // As arithmetic rather than a select, and exact for finite figures: one product is 0, the
  // other the figure itself.
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const unsigned byte = bits[i / 8];
    for (size_t k = 0; k < 8; ++k) {
      const float bit = static_cast<float>((byte >> k) & 1u);
      out[i + k] += positive * (1.0f - bit) + negative * bit;
    }
  }
  for (; i < end; ++i) out[i] += (bits[i / 8] >> (i % 8)) & 1u ? negative : positive;
}

class ScaledSign final : public Compressor {
 public:
  explicit ScaledSign(bool majority) : majority_(majority) {}
  std::string_view name() const override { return majority_ ? "sign" : "efsign"; }
  Carrier carrier() const override { return Carrier::allgather; }
  size_t payload_bytes(size_t count) const override { return sizeof(float) + (count + 7) / 8; }
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    write_scale(payload, static_cast<float>(mean_magnitude(values, count)));
    pack_signs(values, count, payload + sizeof(float));
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out) const override {
    const float scale = read_scale(payload);
    add_by_sign(payload + sizeof(float), 0, count, scale, -scale, out);
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
      add_by_sign(bits, c * kChunk, std::min(count, (c + 1) * kChunk), positive, negative, out);
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
