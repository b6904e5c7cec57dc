#pragma once
// random-k's choice of indices: k distinct indices of [0, count), in ascending order, from
// (seed, step) alone, so that every rank draws the same ones. Drawn on the host by Floyd's
// sampling (k draws, each depending on the ones before); the device compressor uploads them.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sb {

std::vector<uint32_t> randomk_indices(size_t count, size_t k, uint64_t seed, uint64_t step);

}  // namespace sb
