// The quantisers: every value is sent, in a few bits, with fp32 scales (one per tensor, or per
// bucket of values for QSGD).
//   efsign   sign bits and the mean magnitude (the scaled sign of EF-signSGD; run it with error
//            feedback, which is what makes it converge);
//   sign     the same payload aggregated by majority vote (signSGD, Bernstein et al. 2018): each
//            value becomes the sign most ranks sent (0 on a tie) times the ranks' mean magnitude;
//   qsgd     s levels of |x| / ||x||_2, stochastically rounded so that the decoding is unbiased,
//            one signed byte per value (s <= 127), the norm taken per bucket of values (Alistarh
//            et al. 2017 quantise buckets of d values, e.g. 512, each with its own norm), or
//            with --qsgd-bucket 0 per tensor;
//   terngrad -1, 0 or +1 times a scale per tensor (layer), max |x| clipped at 2.5 standard
//            deviations, +-1 with probability |x| / scale (unbiased below the clip);
//   onebit   1-bit SGD (Seide et al. 2014): one bit per value, decoded per chunk of 512 values to
//            the mean of the chunk's non-negative values or to the mean of its negative ones
//            (with error feedback, as the paper runs it).
// Each rank quantises differently, so the payloads do not add up: an allgather carries them.
// The stochastic rounding draws from the rank's own stream (params.stream), varied by the step.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "collectives/compress/byte_quantiser.hpp"
#include "collectives/compress/compressors.hpp"
#include "kernels/moments_avx2.hpp"
#include "kernels/quantise.hpp"
#include "kernels/random.hpp"
#include "kernels/sign.hpp"
#include "kernels/sign_avx2.hpp"
#include "kernels/vector_clones.hpp"

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

// Mean |x|, in eight double partial sums: lane k adds values k, k + 8, ... in order, then the
// ragged end and the lanes are summed. In two parts so that error feedback can feed it a block
// at a time with the same additions: the lanes over a multiple of 8 values, then the end.
SB_VECTOR_CLONES void add_magnitude_lanes(const float* values, size_t count, double* lanes) {
  for (size_t i = 0; i + 8 <= count; i += 8)
    for (int k = 0; k < 8; ++k) lanes[k] += std::fabs(values[i + k]);
}
double mean_magnitude_of_lanes(const double* lanes, const float* end, size_t ragged, size_t count) {
  double sum = 0;
  for (size_t i = 0; i < ragged; ++i) sum += std::fabs(end[i]);
  for (int k = 0; k < 8; ++k) sum += lanes[k];
  return count ? sum / static_cast<double>(count) : 0.0;
}
double mean_magnitude(const float* values, size_t count) {
  double lanes[8] = {};
  const size_t whole = count / 8 * 8;
  add_magnitude_lanes(values, whole, lanes);
  return mean_magnitude_of_lanes(lanes, values + whole, count - whole, count);
}

// residual[i] += gradient[i]: error feedback's first step, a block at a time.
SB_VECTOR_CLONES void add_into(float* residual, const float* gradient, size_t count) {
  for (size_t i = 0; i < count; ++i) residual[i] += gradient[i];
}

// out[i] += unit x level[i]: a byte quantiser's decoding.
SB_VECTOR_CLONES void add_levels(const int8_t* level, size_t count, float unit, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] += unit * static_cast<float>(level[i]);
}

// sum x^2 in eight double lanes (QSGD's norm).
SB_VECTOR_CLONES double sum_of_squares(const float* values, size_t count) {
  double lanes[8] = {};
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int k = 0; k < 8; ++k) lanes[k] += static_cast<double>(values[i + k]) * values[i + k];
  double sum = 0;
  for (; i < count; ++i) sum += static_cast<double>(values[i]) * values[i];
  for (double lane : lanes) sum += lane;
  return sum;
}

// TernGrad's scale (kernels/quantise.hpp) from one pass of sums, squares and magnitudes, in
// eight lanes each: AVX2 where the CPU has it (kernels/moments_avx2.hpp), the same arithmetic.
SB_VECTOR_CLONES float terngrad_scale_of(const float* values, size_t count) {
  double sums[8] = {}, squares[8] = {};
  float largest[8] = {};
  size_t i = 0;
#if defined(__x86_64__)
  if (has_avx2()) i = add_moment_lanes_avx2(values, count, sums, squares, largest);
#endif
  for (; i + 8 <= count; i += 8)
    for (int k = 0; k < 8; ++k) {
      const float x = values[i + k];
      sums[k] += x;
      squares[k] += static_cast<double>(x) * x;
      largest[k] = std::max(largest[k], std::fabs(x));
    }
  double sum = 0, square = 0;
  float top = 0;
  for (; i < count; ++i) {
    sum += values[i];
    square += static_cast<double>(values[i]) * values[i];
    top = std::max(top, std::fabs(values[i]));
  }
  for (int k = 0; k < 8; ++k) sum += sums[k], square += squares[k], top = std::max(top, largest[k]);
  return terngrad_scale(sum, square, top, count);
}

// Bit k of byte j: the sign bit of value 8j + k (so -0 counts as negative). AVX2 takes whole
// bytes where the CPU has it (kernels/sign_avx2.hpp); the loop does the rest.
SB_VECTOR_CLONES void pack_signs_portable(const float* values, size_t count, size_t first_byte, unsigned char* bits) {
  for (size_t j = first_byte; j < (count + 7) / 8; ++j) {
    unsigned byte = 0;
    for (size_t k = 0; k < 8 && 8 * j + k < count; ++k) {
      uint32_t word;
      std::memcpy(&word, values + 8 * j + k, sizeof word);
      byte |= sign_bit(word) << k;
    }
    bits[j] = static_cast<unsigned char>(byte);
  }
}
void pack_signs(const float* values, size_t count, unsigned char* bits) {
  size_t done = 0;
#if defined(__x86_64__)
  if (has_avx2()) done = pack_signs_avx2(values, count, bits);
#endif
  pack_signs_portable(values, count, done / 8, bits);
}

// out[i] += bit i ? negative : positive, for i in [begin, end) with begin a multiple of 8: a
// select, as AVX2's blend does (kernels/sign_avx2.hpp) where the CPU has it.
SB_VECTOR_CLONES void add_by_sign_portable(const unsigned char* bits, size_t begin, size_t end, float positive,
                                           float negative, float* out) {
  for (size_t i = begin; i < end; ++i) out[i] += (bits[i / 8] >> (i % 8)) & 1u ? negative : positive;
}
void add_by_sign(const unsigned char* bits, size_t begin, size_t end, float positive, float negative, float* out) {
#if defined(__x86_64__)
  if (has_avx2()) begin += add_by_sign_avx2(bits, begin, end, positive, negative, out);
#endif
  add_by_sign_portable(bits, begin, end, positive, negative, out);
}

// 1 where x < 0 (not -0, not NaN): kernels/sign.hpp's rule on x's bits.
inline uint32_t below_zero(float x) {
  uint32_t word;
  std::memcpy(&word, &x, sizeof word);
  return below_zero_bit(word);
}

// One chunk of 1-bit SGD: bit i set where values[i] < 0, and the sums of the negative and of the
// other values and how many are negative. The chunk begins at a multiple of 8 values, so its bits
// are whole bytes. Bits and sums are separate loops over independent lanes, without branches, so
// that both vectorise.
struct ChunkSums {
  double positive = 0, negative = 0;
  size_t negatives = 0;
};
// The bits of a chunk's first `whole` values (a multiple of 8) and their lanes (see
// onebit_chunk); returns how many are negative. AVX2 does the same where the CPU has it.
SB_VECTOR_CLONES size_t onebit_lanes_portable(const float* values, size_t whole, unsigned char* bits, double* positive,
                                              double* negative) {
  for (size_t j = 0; j < whole / 8; ++j) {
    uint32_t byte = 0;
    for (uint32_t k = 0; k < 8; ++k) byte |= below_zero(values[8 * j + k]) << k;
    bits[j] = static_cast<unsigned char>(byte);
  }
  uint32_t negatives[8] = {};
  for (size_t i = 0; i < whole; i += 8)
    for (size_t k = 0; k < 8; ++k) {
      const uint32_t below = below_zero(values[i + k]);
      const double x = values[i + k];
      // One product is x itself, the other 0: exact, and a select without a branch.
      negative[k] += x * static_cast<double>(below);
      positive[k] += x * static_cast<double>(1 - below);
      negatives[k] += below;
    }
  size_t total = 0;
  for (uint32_t n : negatives) total += n;
  return total;
}

ChunkSums onebit_chunk(const float* values, size_t count, unsigned char* bits) {
  const size_t whole = count / 8 * 8;
  double positive[8] = {}, negative[8] = {};
  size_t lane_negatives = 0;
#if defined(__x86_64__)
  if (has_avx2())
    lane_negatives = onebit_lanes_avx2(values, whole, bits, positive, negative);
  else
#endif
    lane_negatives = onebit_lanes_portable(values, whole, bits, positive, negative);
  if (whole < count) {
    uint32_t byte = 0;
    for (size_t i = whole; i < count; ++i) byte |= below_zero(values[i]) << (i - whole);
    bits[whole / 8] = static_cast<unsigned char>(byte);
  }
  ChunkSums sums;
  for (size_t i = whole; i < count; ++i) {
    const double x = values[i];
    (below_zero(values[i]) ? sums.negative : sums.positive) += x;
    sums.negatives += below_zero(values[i]);
  }
  for (size_t k = 0; k < 8; ++k) {
    sums.positive += positive[k];
    sums.negative += negative[k];
  }
  sums.negatives += lane_negatives;
  return sums;
}

// Each byte's 8 bits as 8 counts of 0 or 1: a byte of votes becomes one vector add.
struct BitsAsCounts {
  int32_t counts[256][8];
  constexpr BitsAsCounts() : counts() {
    for (int byte = 0; byte < 256; ++byte)
      for (int k = 0; k < 8; ++k) counts[byte][k] = (byte >> k) & 1;
  }
};
constexpr BitsAsCounts kBitsAsCounts;

// Adds one rank's bits of a block to the block's counts of negatives, a byte (8 values) at a time.
SB_VECTOR_CLONES void count_negatives(const unsigned char* bits, size_t bytes, int32_t* negatives) {
  for (size_t j = 0; j < bytes; ++j) {
    const int32_t* add = kBitsAsCounts.counts[bits[j]];
    for (int k = 0; k < 8; ++k) negatives[8 * j + static_cast<size_t>(k)] += add[k];
  }
}

// The votes of one block of counts, without branches (the signs are coin flips to a predictor).
SB_VECTOR_CLONES void vote(const int32_t* negatives, size_t count, int nranks, float magnitude, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = majority_value(negatives[i], nranks, magnitude);
}

// out[i] = magnitude x the sign most of the `nranks` bit arrays give value i (bit set: negative),
// 0 where they tie (majority_value, which the CUDA kernel applies too). A block of values at a
// time: every rank's bits counted into the block's tallies, then the block voted.
void majority_vote(const unsigned char* const* bits, int nranks, size_t count, float magnitude, float* out) {
  constexpr size_t kBlock = 2048;  // values; its tallies stay in L1
  int32_t negatives[kBlock];
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t n = std::min(kBlock, count - start);
    const size_t bytes = (n + 7) / 8;  // the last byte's spare bits count into tallies not voted
    std::fill(negatives, negatives + 8 * bytes, 0);
    for (int r = 0; r < nranks; ++r) count_negatives(bits[r] + start / 8, bytes, negatives);
    vote(negatives, n, nranks, magnitude, out + start);
  }
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
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const float scale = weight * read_scale(payload);
    add_by_sign(payload + sizeof(float), 0, count, scale, -scale, out);
  }
  // Error feedback in two passes over memory instead of four: blocks of the residual get the
  // gradient, their magnitudes and signs while in L1 (the mean's lanes fed in order), then the
  // decoding is taken away. The three calls' arithmetic, so the same bits.
  void compress_with_feedback(float* residual, const float* gradient, size_t count, uint64_t step,
                              unsigned char* payload) override {
    constexpr size_t kBlock = 2048;  // a multiple of 8: whole bytes of signs, whole rounds of lanes
    double lanes[8] = {};
    const size_t whole = count / 8 * 8;
    for (size_t start = 0; start < count; start += kBlock) {
      const size_t n = std::min(kBlock, count - start);
      add_into(residual + start, gradient + start, n);
      add_magnitude_lanes(residual + start, std::min(n, whole - std::min(whole, start)), lanes);
      pack_signs(residual + start, n, payload + sizeof(float) + start / 8);
    }
    write_scale(payload, static_cast<float>(mean_magnitude_of_lanes(lanes, residual + whole, count - whole, count)));
    decompress_add(payload, count, step, -1.0f, residual);
  }
  // signSGD's majority vote: the sign most ranks sent (0 on a tie) times the ranks' mean
  // magnitude, straight from the bits: one pass that writes `out`, nothing decoded.
  void aggregate(const unsigned char* received, size_t count, uint64_t step, int nranks, float* out) override {
    if (!majority_) return Compressor::aggregate(received, count, step, nranks, out);
    const size_t bytes = payload_bytes(count);
    double scale = 0;
    std::vector<const unsigned char*> bits(static_cast<size_t>(nranks));
    for (int r = 0; r < nranks; ++r) {
      scale += read_scale(received + static_cast<size_t>(r) * bytes);
      bits[static_cast<size_t>(r)] = received + static_cast<size_t>(r) * bytes + sizeof(float);
    }
    majority_vote(bits.data(), nranks, count, static_cast<float>(scale / nranks), out);
  }

 private:
  bool majority_;
};

class OneBit final : public Compressor {
 public:
  std::string_view name() const override { return "onebit"; }
  Carrier carrier() const override { return Carrier::allgather; }
  // Two means per chunk, then the bits.
  size_t payload_bytes(size_t count) const override { return onebit_chunks(count) * 2 * sizeof(float) + (count + 7) / 8; }
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    for (size_t c = 0; c < onebit_chunks(count); ++c) encode_chunk(values, count, c, payload);
  }
  // Error feedback chunk by chunk: each 2 KiB of the residual gets the gradient, is encoded and
  // has its decoding taken away while in L1, one pass over memory instead of three, with the
  // three calls' arithmetic (the same bits).
  void compress_with_feedback(float* residual, const float* gradient, size_t count, uint64_t,
                              unsigned char* payload) override {
    for (size_t c = 0; c < onebit_chunks(count); ++c) {
      const size_t begin = c * kOneBitChunk, end = std::min(count, begin + kOneBitChunk);
      add_into(residual + begin, gradient + begin, end - begin);
      encode_chunk(residual, count, c, payload);
      decode_chunk(payload, count, c, -1.0f, residual);
    }
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    for (size_t c = 0; c < onebit_chunks(count); ++c) decode_chunk(payload, count, c, weight, out);
  }

 private:
  // out += weight x chunk c decoded: each value its chunk's mean of the sign its bit gives.
  static void decode_chunk(const unsigned char* payload, size_t count, size_t c, float weight, float* out) {
    const unsigned char* bits = payload + onebit_chunks(count) * 2 * sizeof(float);
    const float positive = weight * read_scale(payload + 2 * c * sizeof(float));
    const float negative = weight * read_scale(payload + (2 * c + 1) * sizeof(float));
    add_by_sign(bits, c * kOneBitChunk, std::min(count, (c + 1) * kOneBitChunk), positive, negative, out);
  }
  // Chunk c of `values`: its bits, and the means of its non-negative and of its negative values.
  static void encode_chunk(const float* values, size_t count, size_t c, unsigned char* payload) {
    unsigned char* bits = payload + onebit_chunks(count) * 2 * sizeof(float);
    const size_t begin = c * kOneBitChunk, end = std::min(count, begin + kOneBitChunk);
    const ChunkSums s = onebit_chunk(values + begin, end - begin, bits + begin / 8);
    const size_t positives = end - begin - s.negatives;
    write_scale(payload + 2 * c * sizeof(float),
                positives ? static_cast<float>(s.positive / static_cast<double>(positives)) : 0.0f);
    write_scale(payload + (2 * c + 1) * sizeof(float),
                s.negatives ? static_cast<float>(s.negative / static_cast<double>(s.negatives)) : 0.0f);
  }
};

// A signed byte per value after one fp32 scale per bucket of values (kernels/quantise.hpp), or
// with no buckets per tensor of the values (byte_quantiser.hpp): the layout QSGD and TernGrad
// share, [scale 0 .. scale B-1][level 0 .. level count-1].
class ByteQuantiser : public Compressor {
 public:
  ByteQuantiser(size_t bucket, std::vector<TensorView> tensors, uint64_t stream)
      : bucket_(bucket), tensors_(std::move(tensors)), stream_(stream) {}
  Carrier carrier() const override { return Carrier::allgather; }
  size_t payload_bytes(size_t count) const override { return sizeof(float) * scales_of(count) + count; }
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload) override {
    const std::vector<size_t> at = scale_offsets(count);
    scales_.resize(at.size() - 1);
    const uint64_t key = step_key(step);
    for (size_t b = 0; b < scales_.size(); ++b) encode_span(values, at, b, key, payload, [](size_t, size_t) {});
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const std::vector<size_t> at = scale_offsets(count);
    const size_t scales = at.size() - 1;
    const int8_t* level = reinterpret_cast<const int8_t*>(payload + scales * sizeof(float));
    for (size_t b = 0; b < scales; ++b) add_levels(level + at[b], at[b + 1] - at[b], unit_of(payload, b, weight), out + at[b]);
  }
  // Error feedback span by span (a bucket, or a tensor): the gradient added, the scale taken, then
  // the decoded taken back a block at a time as it is rounded, while in L1. A QSGD bucket is one
  // pass over memory instead of four; a whole tensor's scale needs it read once more. The three
  // calls' arithmetic and uniforms, so the same bits.
  void compress_with_feedback(float* residual, const float* gradient, size_t count, uint64_t step,
                              unsigned char* payload) override {
    const std::vector<size_t> at = scale_offsets(count);
    scales_.resize(at.size() - 1);
    const int8_t* level = reinterpret_cast<const int8_t*>(payload + scales_.size() * sizeof(float));
    const uint64_t key = step_key(step);
    for (size_t b = 0; b < scales_.size(); ++b) {
      add_into(residual + at[b], gradient + at[b], at[b + 1] - at[b]);
      encode_span(residual, at, b, key, payload, [&](size_t begin, size_t n) {
        add_levels(level + begin, n, unit_of(payload, b, -1.0f), residual + begin);
      });
    }
  }

 protected:
  virtual int levels() const = 0;
  // A bucket's scale: |level| = floor(|x| s / scale + u), u uniform in [0, 1).
  virtual float scale_of(const float* values, size_t count) const = 0;

 private:
  bool per_tensor() const { return scales_per_tensor(bucket_, tensors_); }
  size_t scales_of(size_t count) const { return per_tensor() ? tensors_.size() : scale_count(bucket_, count); }
  // Where each scale's values start, and count at the end.
  std::vector<size_t> scale_offsets(size_t count) const {
    if (per_tensor()) return tensor_offsets(tensors_, count);
    std::vector<size_t> at;
    const size_t span = scale_span(bucket_, count);
    for (size_t b = 0; b < scale_count(bucket_, count); ++b) at.push_back(b * span);
    at.push_back(count);
    return at;
  }
  // The stochastic rounding's key for a step (this rank's stream); then scale b's span of values
  // (at[b] .. at[b + 1]): its scale into the payload's head, then its levels a block at a time,
  // each block then handed to after_block(begin, n). The uniforms: per tensor each has its own
  // key and counts from 0; buckets share the step's key and count on through the buffer.
  uint64_t step_key(uint64_t step) const { return random_key(stream_, static_cast<uint64_t>(levels()), step); }
  template <class AfterBlock>
  void encode_span(const float* values, const std::vector<size_t>& at, size_t b, uint64_t key_of_step,
                   unsigned char* payload, AfterBlock after_block) {
    constexpr size_t kBlock = 2048;
    const uint64_t key = per_tensor() ? tensor_rounding_key(key_of_step, b) : key_of_step;
    const size_t first = per_tensor() ? 0 : at[b];
    int8_t* level = reinterpret_cast<int8_t*>(payload + scales_.size() * sizeof(float));
    scales_[b] = scale_of(values + at[b], at[b + 1] - at[b]);
    write_scale(payload + b * sizeof(float), scales_[b]);
    for (size_t begin = at[b]; begin < at[b + 1]; begin += kBlock) {
      const size_t n = std::min(kBlock, at[b + 1] - begin);
      stochastic_levels_cpu(values + begin, n, 0, &scales_[b], static_cast<float>(levels()), key, level + begin,
                            first + begin - at[b]);
      after_block(begin, n);
    }
  }
  // Scale b's decoding unit: weight x scale / levels.
  float unit_of(const unsigned char* payload, size_t b, float weight) const {
    return weight * (read_scale(payload + b * sizeof(float)) / static_cast<float>(levels()));
  }

  size_t bucket_;
  std::vector<TensorView> tensors_;
  uint64_t stream_;
  std::vector<float> scales_;  // compress's, aligned for the rounding loop
};

// QSGD with the paper's buckets: each bucket of values is scaled by its own norm, which bounds
// the variance by the bucket's size instead of the tensor's.
class Qsgd final : public ByteQuantiser {
 public:
  Qsgd(int levels, size_t bucket, std::vector<TensorView> tensors, uint64_t stream)
      : ByteQuantiser(bucket, std::move(tensors), stream), levels_(levels) {}
  std::string_view name() const override { return "qsgd"; }

 private:
  int levels() const override { return levels_; }
  float scale_of(const float* values, size_t count) const override {
    return static_cast<float>(std::sqrt(sum_of_squares(values, count)));
  }
  int levels_;
};

// TernGrad, scaled per tensor (layer) and clipped at 2.5 standard deviations, as its paper does
// (Wen et al. 2017): values beyond the scale take level +-1 with certainty, which is the clipping.
// Without it one outlier sets the scale, and nearly every other value rounds to 0 or to the
// outlier's size.
class TernGrad final : public ByteQuantiser {
 public:
  TernGrad(std::vector<TensorView> tensors, uint64_t stream) : ByteQuantiser(0, std::move(tensors), stream) {}
  std::string_view name() const override { return "terngrad"; }

 private:
  int levels() const override { return 1; }
  float scale_of(const float* values, size_t count) const override { return terngrad_scale_of(values, count); }
};

}  // namespace

std::unique_ptr<Compressor> make_sign_compressor() { return std::make_unique<ScaledSign>(true); }

std::unique_ptr<Compressor> make_efsign_compressor() { return std::make_unique<ScaledSign>(false); }
std::unique_ptr<Compressor> make_onebit_compressor() { return std::make_unique<OneBit>(); }
std::unique_ptr<Compressor> make_qsgd_compressor(const CompressorParams& params) {
  return std::make_unique<Qsgd>(params.levels, params.bucket, params.tensors, params.stream);
}
std::unique_ptr<Compressor> make_terngrad_compressor(const CompressorParams& params) {
  return std::make_unique<TernGrad>(params.tensors, params.stream);
}

}  // namespace sb
