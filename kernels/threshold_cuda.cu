// DGC's selection on device memory (kernels/threshold.hpp): the sample gathered by a kernel and
// settled on the host by the CPU's own quantile (it is small: 1% of the values), and the
// selection of every value at or above the threshold by a stream compaction, in index order.
#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_select.cuh>
#include <vector>

#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"
#include "kernels/threshold.hpp"

namespace sb {
namespace {

// magnitudes[j] = |values at sample j| (every value, in order, when the sample is all of them).
__global__ void sample_magnitudes_kernel(const float* values, size_t count, size_t samples, uint64_t key,
                                         float* magnitudes) {
  for (size_t j = grid_first(); j < samples; j += grid_stride())
    magnitudes[j] = fabsf(values[samples == count ? j : sample_position(key, j, count)]);
}

struct AtLeast {
  const float* values;
  float threshold;
  __device__ bool operator()(uint32_t i) const {
    const float m = fabsf(values[i]);
    return m >= threshold || isnan(m);
  }
};

}  // namespace

float sampled_threshold_cuda(const float* values, size_t count, double ratio, size_t samples, uint64_t key,
                             cudaStream_t stream) {
  if (count == 0) return 0.0f;
  const size_t n = sample_size(count, samples);
  float* magnitudes = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&magnitudes, n * sizeof(float), stream));
  sample_magnitudes_kernel<<<cuda_blocks_for(n), kCudaThreads, 0, stream>>>(values, count, n, key, magnitudes);
  SB_CUDA_CHECK(cudaGetLastError());
  std::vector<float> host(n);
  SB_CUDA_CHECK(cudaMemcpyAsync(host.data(), magnitudes, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  SB_CUDA_CHECK(cudaFreeAsync(magnitudes, stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return magnitude_quantile(host, ratio);
}

size_t select_at_least_cuda(const float* values, size_t count, float threshold, uint32_t* indices,
                            cudaStream_t stream) {
  if (count == 0) return 0;
  const thrust::counting_iterator<uint32_t> positions(0);
  const AtLeast at_least{values, threshold};
  size_t temp_bytes = 0;
  int64_t* selected = nullptr;
  SB_CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, positions, indices, selected, static_cast<int64_t>(count),
                                      at_least, stream));
  void* temp = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&temp, temp_bytes > 0 ? temp_bytes : 1, stream));  // never a 0-byte request
  SB_CUDA_CHECK(cudaMallocAsync(&selected, sizeof(int64_t), stream));
  SB_CUDA_CHECK(cub::DeviceSelect::If(temp, temp_bytes, positions, indices, selected, static_cast<int64_t>(count),
                                      at_least, stream));
  int64_t passed = 0;
  SB_CUDA_CHECK(cudaMemcpyAsync(&passed, selected, sizeof passed, cudaMemcpyDeviceToHost, stream));
  SB_CUDA_CHECK(cudaFreeAsync(temp, stream));
  SB_CUDA_CHECK(cudaFreeAsync(selected, stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return static_cast<size_t>(passed);
}

}  // namespace sb
