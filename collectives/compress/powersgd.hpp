#pragma once
// What PowerSGD's host and device forms share (lowrank_compressors.cpp): the matrix a gradient
// is viewed as, and the key of the first Q, so that both make the same payloads.
#include <cstddef>
#include <cstdint>

namespace sb {

// The flat values row by row as rows x cols (cols = ceil(sqrt(count)), the last row zero-padded),
// approximated at rank r = min(rank, rows, cols).
struct PowerSgdShape {
  size_t rows, cols, r;
};
PowerSgdShape powersgd_shape(size_t count, size_t rank);

// The key of the first Q (cols x r standard normal values) for the shared seed.
uint64_t powersgd_start_key(uint64_t seed, size_t q_size);

}  // namespace sb
