// The gathers and the scatter of kernels/sparse.hpp: one thread per slot.
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"
#include "kernels/sparse.hpp"

namespace sb {
namespace {

template <class T>
__global__ void gather_kernel(const T* values, const uint32_t* indices, size_t k, T* out) {
  for (size_t j = grid_first(); j < k; j += grid_stride()) out[j] = values[indices[j]];
}

__global__ void scatter_add_kernel(const uint32_t* indices, const float* sent, size_t k, float* out) {
  for (size_t j = grid_first(); j < k; j += grid_stride())
    if (indices[j] != kNoIndex) out[indices[j]] += sent[j];
}

template <class T>
void gather(const T* values, const uint32_t* indices, size_t k, T* out, cudaStream_t stream) {
  if (k == 0) return;
  gather_kernel<<<cuda_blocks_for(k), kCudaThreads, 0, stream>>>(values, indices, k, out);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void gather_cuda(const float* values, const uint32_t* indices, size_t k, float* out, cudaStream_t stream) {
  gather(values, indices, k, out, stream);
}
void gather_cuda(const uint32_t* values, const uint32_t* indices, size_t k, uint32_t* out, cudaStream_t stream) {
  gather(values, indices, k, out, stream);
}

void scatter_add_cuda(const uint32_t* indices, const float* sent, size_t k, float* out, cudaStream_t stream) {
  if (k == 0) return;
  scatter_add_kernel<<<cuda_blocks_for(k), kCudaThreads, 0, stream>>>(indices, sent, k, out);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb
