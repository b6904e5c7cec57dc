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

// One block per chunk: every value of a chunk has its tensor's scale and key, and counts from its
// tensor's first value, as the host rounds each tensor on its own.
__global__ void tensor_levels_kernel(const float* values, DeviceTensorChunks chunks, const float* scales, float s,
                                     uint64_t key, bool key_per_tensor, int8_t* level) {
  const uint32_t c = blockIdx.x, t = chunks.tensor_of[c];
  const uint64_t tensor_first = chunks.begin[chunks.first_chunk[t]];
  const uint32_t key32 = quantise_key(key_per_tensor ? tensor_rounding_key(key, t) : key);
  const float unit_inverse = unit_inverse_of(scales[t], s);
  for (uint64_t i = chunks.begin[c] + threadIdx.x; i < chunks.begin[c + 1]; i += blockDim.x)
    level[i] = stochastic_level(values[i], unit_inverse, s, stochastic_uniform(key32, static_cast<uint32_t>(i - tensor_first)));
}

}  // namespace

void tensor_levels_cuda(const float* values, const DeviceTensorChunks& chunks, const float* scales, float s,
                        uint64_t key, bool key_per_tensor, int8_t* level, cudaStream_t stream) {
  if (chunks.chunks == 0) return;
  tensor_levels_kernel<<<chunks.chunks, kCudaThreads, 0, stream>>>(values, chunks, scales, s, key, key_per_tensor, level);
  SB_CUDA_CHECK(cudaGetLastError());
}

void stochastic_levels_cuda(const float* values, size_t count, size_t bucket, const float* scales, float s, uint64_t key,
                            int8_t* level, cudaStream_t stream) {
  if (count == 0) return;
  stochastic_levels_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(
      values, count, scale_span(bucket, count), scales, s, key, level);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb
