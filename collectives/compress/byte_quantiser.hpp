#pragma once
// What QSGD's and TernGrad's host and device forms share when a fused buffer holds several
// tensors: with no buckets of values (TernGrad always, QSGD with --qsgd-bucket 0) each tensor
// gets its own scale, as the papers scale each layer, instead of one scale for the whole buffer;
// and each tensor's stochastic rounding its own key, so that no two tensors draw the same
// uniforms at the same offsets.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/compress/compressor.hpp"
#include "kernels/quantise.hpp"  // tensor_rounding_key

namespace sb {

// Whether the values get a scale per tensor: no buckets, and more than one tensor given.
inline bool scales_per_tensor(size_t bucket, const std::vector<TensorView>& tensors) {
  return bucket == 0 && tensors.size() > 1;
}

// Where each tensor starts, and count at the end (tensors.size() + 1 offsets). Throws
// std::invalid_argument when the tensors do not add up to count.
inline std::vector<size_t> tensor_offsets(const std::vector<TensorView>& tensors, size_t count) {
  std::vector<size_t> at{0};
  for (const TensorView& t : tensors) at.push_back(at.back() + t.count);
  if (at.back() != count)
    throw std::invalid_argument("tensors of " + std::to_string(at.back()) + " values in all, given " +
                                std::to_string(count));
  return at;
}

}  // namespace sb
