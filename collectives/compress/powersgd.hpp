#pragma once
// What PowerSGD's host and device forms share (lowrank_compressors.cpp): how the values are cut
// into matrices and laid out in the payloads, and the key of the first Q, so that both make the
// same payloads.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "collectives/compress/compressor.hpp"
#include "kernels/lowrank.hpp"
#include "kernels/tensor_chunks.hpp"

namespace sb {

// One tensor of the values: a rows x cols matrix approximated at rank r, or (r = 0) a vector or
// a matrix too small to gain from it, sent as it is.
struct PowerSgdBlock {
  size_t offset = 0, count = 0;      // its values
  size_t rows = 0, cols = 0, r = 0;  // rows x cols >= count: zero-padded when the shape was not known
  size_t p_offset = 0;  // its P (rows x r) in round 0's payload, in floats
  size_t q_offset = 0;  // its Q (cols x r) in round 1's payload, or its values there when not compressed
  bool compressed() const { return r > 0; }
  bool padded() const { return rows * cols != count; }
};

struct PowerSgdLayout {
  std::vector<PowerSgdBlock> blocks;
  size_t p_floats = 0;       // round 0's payload: every compressed block's P
  size_t q_floats = 0;       // every Q: the front of round 1's payload, and the warm start kept
  size_t round1_floats = 0;  // the Q's, then the values of the blocks sent as they are
  size_t largest_padded = 0; // the most values of a compressed padded matrix: the scratch it needs
};

// The blocks of `count` values made of `tensors` (empty: one tensor of unknown shape). A matrix
// of known shape is compressed as it is; one of unknown shape is viewed near-square (cols =
// ceil(sqrt(count)), the last row zero-padded). As PyTorch's PowerSGD hook does, a matrix is
// compressed only where its factors are under half its size, (rows + cols) r x 2 < rows x cols, at
// r = min(rank, rows, cols); the rest (biases, batch-norm parameters, small matrices) go in round 1
// as they are. Throws std::invalid_argument when the tensors do not add up to count or a count is
// not a whole number of rows.
PowerSgdLayout powersgd_layout(const std::vector<TensorView>& tensors, size_t count, size_t rank);

// What the device form does in one launch each, whatever the number of tensors: the blocks sent
// as they are, as runs from the values to round 1's payload (merged where adjacent, cut for a
// block each; swap from and to for the decoding), and every compressed block's P in round 0's
// payload, to orthonormalise.
std::vector<FloatRun> powersgd_uncompressed_runs(const PowerSgdLayout& layout);
std::vector<FactorView> powersgd_factors(const PowerSgdLayout& layout);

// powersgd_layout of the last count asked for, computed again only when the count changes (a
// compressor serves one bucket, whose count does not).
class PowerSgdLayouts {
 public:
  PowerSgdLayouts(std::vector<TensorView> tensors, size_t rank) : tensors_(std::move(tensors)), rank_(rank) {}
  const PowerSgdLayout& of(size_t count) const {
    if (!known_ || count_ != count) {
      layout_ = powersgd_layout(tensors_, count, rank_);
      count_ = count;
      known_ = true;
    }
    return layout_;
  }

 private:
  std::vector<TensorView> tensors_;
  size_t rank_;
  mutable PowerSgdLayout layout_;
  mutable size_t count_ = 0;
  mutable bool known_ = false;
};

// The key of the first Q (q_floats standard normal values) for the shared seed.
uint64_t powersgd_start_key(uint64_t seed, size_t q_size);

}  // namespace sb
