#pragma once
// Deep Gradient Compression's selection (Lin et al. 2018): rather than an exact top-k over the
// whole gradient, estimate the magnitude threshold of the top `ratio` from a random sample, keep
// every value above it, and settle the exact top-k only among those few candidates.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/host_device.hpp"
#include "kernels/random.hpp"

#if SB_HAVE_CUDA
struct CUstream_st;  // cudaStream_t, without the CUDA headers
#endif

namespace sb {

// How the threshold compressor samples, for a gradient of `count` values, a target density
// `ratio` and the shared seed: 1% of the values (at least 1024), the threshold of the top
// 2 x ratio, positions drawn from (seed, step). The host and device forms both use it.
struct ThresholdSampling {
  size_t samples;
  double ratio;
  uint64_t key;
};
ThresholdSampling dgc_sampling(size_t count, double ratio, uint64_t seed, uint64_t step);

// How many magnitudes a sample of `samples` takes from `count` values: every value when
// samples >= count, else samples (at least 1).
size_t sample_size(size_t count, size_t samples);
// Sample j's position (with replacement), on the host or the device.
SB_HD size_t sample_position(uint64_t key, size_t j, size_t count) { return random_bits(key, j) % count; }

// The magnitude above which about `ratio` of the values lie: the (1 - ratio) quantile of the
// magnitudes of sample_size(count, samples) values at sample_position()s. samples >= count reads
// every value instead, and gives the exact quantile.
float sampled_threshold(const float* values, size_t count, double ratio, size_t samples, uint64_t key);
// The value with a fraction `ratio` of `magnitudes` at or above it, NaN counted above every
// number; reorders `magnitudes`.
float magnitude_quantile(std::vector<float>& magnitudes, double ratio);

// Appends to `indices` (ascending) every i with |values[i]| >= threshold (NaN included).
void select_at_least(const float* values, size_t count, float threshold, std::vector<uint32_t>& indices);

// DGC's retry when the sample overshot: while fewer than k values pass the threshold, halve it,
// at most three times. `select(threshold)` selects afresh and returns how many passed.
template <class Select>
size_t select_with_retries(float threshold, size_t k, Select&& select) {
  size_t passed = select(threshold);
  for (int retry = 0; retry < 3 && passed < k && threshold > 0; ++retry) {
    threshold /= 2;
    passed = select(threshold);
  }
  return passed;
}

#if SB_HAVE_CUDA
// The same on device memory (threshold_cuda.cu). The sample's magnitudes, gathered on the device
// and settled on the host (waits for the stream): the same threshold as sampled_threshold.
float sampled_threshold_cuda(const float* values, size_t count, double ratio, size_t samples, uint64_t key,
                             CUstream_st* stream);
// Writes to `indices` (device, room for count) every i with |values[i]| >= threshold or NaN, in
// ascending order, and returns how many (waits for the stream).
size_t select_at_least_cuda(const float* values, size_t count, float threshold, uint32_t* indices, CUstream_st* stream);
#endif

}  // namespace sb
