// PowerSGD (Vogels, Karimireddy and Jaggi 2019): the gradient, viewed as an n x m matrix M (the
// flat values row by row, m = ceil(sqrt(count)), zero-padded), is approximated by P Q^T of rank r
// with one step of subspace iteration, warm-started from the previous step's Q:
//   round 0: P_i = M_i Q                 allreduce: P = sum of P_i; orthonormalise P's columns
//   round 1: Q_i = M_i^T P               allreduce: Q = sum of Q_i
//   decode:  P Q^T / ranks (the average), and Q / ranks is the next step's start.
// Both factors add up, so allreduces carry them: (n + m) r values instead of n m. Error feedback
// keeps M_i - P Q_i^T, what this rank's own factor missed. The first Q is drawn from the shared
// seed, so every rank starts from the same one.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "collectives/compress/compressors.hpp"
#include "collectives/compress/powersgd.hpp"
#include "kernels/lowrank.hpp"
#include "kernels/random.hpp"

namespace sb {

PowerSgdShape powersgd_shape(size_t count, size_t rank) {
  const size_t cols = std::max<size_t>(1, static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(count)))));
  const size_t rows = std::max<size_t>(1, (count + cols - 1) / cols);
  return {rows, cols, std::min({rank, rows, cols})};
}

uint64_t powersgd_start_key(uint64_t seed, size_t q_size) { return random_key(seed, 0x706f776572, q_size); }

namespace {

class PowerSgd final : public Compressor {
 public:
  PowerSgd(int rank, uint64_t seed) : rank_(static_cast<size_t>(rank)), seed_(seed) {}
  std::string_view name() const override { return "powersgd"; }
  Carrier carrier() const override { return Carrier::allreduce; }
  int rounds() const override { return 2; }
  size_t payload_bytes(size_t count) const override {
    const Shape s = shape(count);
    return (s.rows + s.cols) * s.r * sizeof(float);
  }
  size_t round_payload_bytes(size_t count, int round) const override {
    const Shape s = shape(count);
    return (round == 0 ? s.rows : s.cols) * s.r * sizeof(float);
  }
  // Round 0: P_i = M_i Q, from the warm-started Q.
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    const Shape s = shape(count);
    start_q(s);
    matmul_cpu(padded(values, count, s), s.rows, s.cols, q_.data(), s.r, reinterpret_cast<float*>(payload));
  }
  // Round 1: P = orthonormalised sum of the P_i; Q_i = M_i^T P.
  void next_round(const float* values, size_t count, int, const unsigned char* aggregate, unsigned char* payload) override {
    const Shape s = shape(count);
    p_.assign(reinterpret_cast<const float*>(aggregate), reinterpret_cast<const float*>(aggregate) + s.rows * s.r);
    orthonormalise_columns_cpu(p_.data(), s.rows, s.r);
    matmul_transposed_cpu(padded(values, count, s), s.rows, s.cols, p_.data(), s.r, reinterpret_cast<float*>(payload));
  }
  // out += weight P Q^T for a round-1 payload (one rank's Q_i, or their sum).
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const Shape s = shape(count);
    const float* q = reinterpret_cast<const float*>(payload);
    if (s.rows * s.cols == count) return add_outer_cpu(p_.data(), q, s.rows, s.cols, s.r, weight, out);
    decoded_.assign(s.rows * s.cols, 0.0f);
    add_outer_cpu(p_.data(), q, s.rows, s.cols, s.r, weight, decoded_.data());
    for (size_t i = 0; i < count; ++i) out[i] += decoded_[i];
  }
  std::vector<float> carried() const override { return q_; }
  void restore_carried(std::vector<float> state) override { q_ = std::move(state); }
  // The average, and the averaged Q kept as the next step's start.
  void aggregate(const unsigned char* received, size_t count, uint64_t step, int nranks, float* out) override {
    Compressor::aggregate(received, count, step, nranks, out);
    const Shape s = shape(count);
    const float* q = reinterpret_cast<const float*>(received);
    for (size_t k = 0; k < s.cols * s.r; ++k) q_[k] = q[k] / static_cast<float>(nranks);
  }

 private:
  using Shape = PowerSgdShape;
  Shape shape(size_t count) const { return powersgd_shape(count, rank_); }
  // The first Q of this shape: standard normal from the shared seed (the same on every rank).
  void start_q(const Shape& s) {
    if (q_.size() == s.cols * s.r) return;
    q_.resize(s.cols * s.r);
    standard_normal_cpu(q_.data(), q_.size(), powersgd_start_key(seed_, s.cols * s.r));
  }
  // The values as the zero-padded matrix (no copy when count fills it).
  const float* padded(const float* values, size_t count, const Shape& s) {
    if (s.rows * s.cols == count) return values;
    matrix_.assign(s.rows * s.cols, 0.0f);
    std::memcpy(matrix_.data(), values, count * sizeof(float));
    return matrix_.data();
  }

  size_t rank_;
  uint64_t seed_;
  std::vector<float> q_, p_, matrix_;       // q_: the warm start, replaced by aggregate()
  mutable std::vector<float> decoded_;      // scratch of decompress_add when the matrix is padded
};

}  // namespace

std::unique_ptr<Compressor> make_powersgd_compressor(const CompressorParams& params) {
  return std::make_unique<PowerSgd>(params.rank, params.seed);
}

}  // namespace sb
