// PowerSGD (Vogels, Karimireddy and Jaggi 2019): each matrix-shaped gradient M (a convolution's
// K x CRS, a linear layer's weight) is approximated by P Q^T of rank r with one step of subspace
// iteration, warm-started from the previous step's Q:
//   round 0: P_i = M_i Q                 allreduce: P = sum of P_i; orthonormalise P's columns
//   round 1: Q_i = M_i^T P               allreduce: Q = sum of Q_i
//   decode:  P Q^T / ranks (the average), and Q / ranks is the next step's start.
// Both factors add up, so allreduces carry them: (n + m) r values instead of n m. A fused bucket
// is compressed tensor by tensor, every P in one allreduce and every Q in the next, and the
// vectors (biases, batch norm) ride in round 1 as they are (powersgd_layout). Error feedback keeps
// M_i - P Q_i^T, what this rank's own factor missed. The first Q is drawn from the shared seed,
// so every rank starts from the same one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "collectives/compress/compressors.hpp"
#include "collectives/compress/powersgd.hpp"
#include "kernels/lowrank.hpp"
#include "kernels/random.hpp"

namespace sb {

PowerSgdLayout powersgd_layout(const std::vector<TensorView>& tensors, size_t count, size_t rank) {
  const std::vector<TensorView> whole = {{count, 0}};
  const std::vector<TensorView>& views = tensors.empty() ? whole : tensors;
  PowerSgdLayout layout;
  size_t offset = 0;
  for (const TensorView& t : views) {
    if (t.count == 0) continue;
    PowerSgdBlock b;
    b.offset = offset;
    b.count = t.count;
    if (t.rows == 0) {
      b.cols = static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(t.count))));
      b.rows = (t.count + b.cols - 1) / b.cols;
    } else {
      if (t.count % t.rows != 0)
        throw std::invalid_argument("powersgd: a tensor of " + std::to_string(t.count) + " values is not " +
                                    std::to_string(t.rows) + " whole rows");
      b.rows = t.rows;
      b.cols = t.count / t.rows;
    }
    const size_t r = std::min({rank, b.rows, b.cols});
    if (b.rows > 1 && b.cols > 1 && (b.rows + b.cols) * r * 2 < b.rows * b.cols) b.r = r;
    if (b.compressed()) {
      b.p_offset = layout.p_floats;
      b.q_offset = layout.q_floats;
      layout.p_floats += b.rows * b.r;
      layout.q_floats += b.cols * b.r;
      if (b.padded()) layout.largest_padded = std::max(layout.largest_padded, b.rows * b.cols);
    }
    layout.blocks.push_back(b);
    offset += t.count;
  }
  if (offset != count)
    throw std::invalid_argument("powersgd: tensors of " + std::to_string(offset) + " values in all, given " +
                                std::to_string(count));
  // The blocks sent as they are follow the Q's in round 1.
  layout.round1_floats = layout.q_floats;
  for (PowerSgdBlock& b : layout.blocks)
    if (!b.compressed()) {
      b.q_offset = layout.round1_floats;
      layout.round1_floats += b.count;
    }
  return layout;
}

std::vector<FloatRun> powersgd_uncompressed_runs(const PowerSgdLayout& layout) {
  std::vector<FloatRun> runs;
  for (const PowerSgdBlock& b : layout.blocks)
    if (!b.compressed()) runs.push_back({b.offset, b.q_offset, b.count});
  return merge_and_cut_runs(runs);
}

std::vector<FactorView> powersgd_factors(const PowerSgdLayout& layout) {
  std::vector<FactorView> factors;
  for (const PowerSgdBlock& b : layout.blocks)
    if (b.compressed()) factors.push_back({b.p_offset, b.rows, b.r});
  return factors;
}

uint64_t powersgd_start_key(uint64_t seed, size_t q_size) { return random_key(seed, 0x706f776572, q_size); }

namespace {

class PowerSgd final : public Compressor {
 public:
  PowerSgd(int rank, uint64_t seed, std::vector<TensorView> tensors)
      : layouts_(std::move(tensors), static_cast<size_t>(rank)), seed_(seed) {}
  std::string_view name() const override { return "powersgd"; }
  Carrier carrier() const override { return Carrier::allreduce; }
  int rounds() const override { return 2; }
  size_t payload_bytes(size_t count) const override {
    const PowerSgdLayout& l = layout(count);
    return (l.p_floats + l.round1_floats) * sizeof(float);
  }
  size_t round_payload_bytes(size_t count, int round) const override {
    const PowerSgdLayout& l = layout(count);
    return (round == 0 ? l.p_floats : l.round1_floats) * sizeof(float);
  }
  // Round 0: P_i = M_i Q for each matrix, from the warm-started Q's.
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    const PowerSgdLayout& l = layout(count);
    start_q(l);
    float* p = reinterpret_cast<float*>(payload);
    for (const PowerSgdBlock& b : l.blocks)
      if (b.compressed()) matmul_cpu(matrix(values, b), b.rows, b.cols, q_.data() + b.q_offset, b.r, p + b.p_offset);
  }
  // Round 1: each P = its orthonormalised sum of the P_i; Q_i = M_i^T P; then the vectors.
  void next_round(const float* values, size_t count, int, const unsigned char* aggregate, unsigned char* payload) override {
    const PowerSgdLayout& l = layout(count);
    p_.assign(reinterpret_cast<const float*>(aggregate), reinterpret_cast<const float*>(aggregate) + l.p_floats);
    float* out = reinterpret_cast<float*>(payload);
    for (const PowerSgdBlock& b : l.blocks) {
      if (!b.compressed()) {
        std::memcpy(out + b.q_offset, values + b.offset, b.count * sizeof(float));
        continue;
      }
      orthonormalise_columns_cpu(p_.data() + b.p_offset, b.rows, b.r);
      matmul_transposed_cpu(matrix(values, b), b.rows, b.cols, p_.data() + b.p_offset, b.r, out + b.q_offset);
    }
  }
  // out += weight P Q^T per matrix, weight x the vectors, for a round-1 payload (one rank's, or their sum).
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const PowerSgdLayout& l = layout(count);
    const float* in = reinterpret_cast<const float*>(payload);
    for (const PowerSgdBlock& b : l.blocks) {
      float* o = out + b.offset;
      if (!b.compressed()) {
        const float* v = in + b.q_offset;
        for (size_t i = 0; i < b.count; ++i) o[i] += weight * v[i];
      } else if (!b.padded()) {
        add_outer_cpu(p_.data() + b.p_offset, in + b.q_offset, b.rows, b.cols, b.r, weight, o);
      } else {
        decoded_.assign(b.rows * b.cols, 0.0f);
        add_outer_cpu(p_.data() + b.p_offset, in + b.q_offset, b.rows, b.cols, b.r, weight, decoded_.data());
        for (size_t i = 0; i < b.count; ++i) o[i] += decoded_[i];
      }
    }
  }
  std::vector<float> carried() const override { return q_; }
  void restore_carried(std::vector<float> state) override { q_ = std::move(state); }
  // The average, and the averaged Q's kept as the next step's start.
  void aggregate(const unsigned char* received, size_t count, uint64_t step, int nranks, float* out) override {
    Compressor::aggregate(received, count, step, nranks, out);
    const float* q = reinterpret_cast<const float*>(received);
    for (size_t k = 0; k < layout(count).q_floats; ++k) q_[k] = q[k] / static_cast<float>(nranks);
  }

 private:
  const PowerSgdLayout& layout(size_t count) const { return layouts_.of(count); }
  // The first Q's of this layout: standard normal from the shared seed (the same on every rank).
  // A restored warm start of the right size is kept.
  void start_q(const PowerSgdLayout& l) {
    if (q_.size() == l.q_floats) return;
    q_.resize(l.q_floats);
    standard_normal_cpu(q_.data(), q_.size(), powersgd_start_key(seed_, q_.size()));
  }
  // A block's values as its matrix (a zero-padded copy when its shape was not known).
  const float* matrix(const float* values, const PowerSgdBlock& b) {
    if (!b.padded()) return values + b.offset;
    matrix_.assign(b.rows * b.cols, 0.0f);
    std::memcpy(matrix_.data(), values + b.offset, b.count * sizeof(float));
    return matrix_.data();
  }

  PowerSgdLayouts layouts_;
  uint64_t seed_;
  std::vector<float> q_, p_, matrix_;  // q_: the warm starts, replaced by aggregate()
  mutable std::vector<float> decoded_;  // scratch of decompress_add for a padded matrix
};

}  // namespace

std::unique_ptr<Compressor> make_powersgd_compressor(const CompressorParams& params) {
  return std::make_unique<PowerSgd>(params.rank, params.seed, params.tensors);
}

}  // namespace sb
