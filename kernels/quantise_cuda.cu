// The stochastic rounding of kernels/quantise.hpp on device memory: one thread per value, the
// same element functions and uniforms as the CPU loop.
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/quantise.hpp"

namespace sb {
namespace {

__global__ void stochastic_levels_kernel(const float* values, size_t count, size_t bucket, const float* scales, float s,
                                         uint64_t key, int8_t* level) {
  const uint32_t key32 = quantise_key(key);
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    const float unit_inverse = unit_inverse_of(scales[i / bucket], s);  // the host's division, IEEE-rounded
    level[i] = stochastic_level(values[i], unit_inverse, s, stochastic_uniform(key32, static_cast<uint32_t>(i)));
  }
}

}  // namespace

void stochastic_levels_cuda(const float* values, size_t count, size_t bucket, const float* scales, float s, uint64_t key,
                            int8_t* level, cudaStream_t stream) {
  if (count == 0) return;
  stochastic_levels_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(
      values, count, scale_span(bucket, count), scales, s, key, level);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb
