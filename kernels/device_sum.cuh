#pragma once
// A deterministic sum over a device array, in double: each block writes its partial sum, then one
// block adds the partials in a fixed order. No atomics, so the same input gives the same bits on
// every run (an atomicAdd per block would add the blocks in whatever order they finish).
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"

namespace sb {

template <class Term>
__global__ void partial_sums_kernel(size_t count, Term term, double* partials) {
  double sum = 0;
  for (size_t i = grid_first(); i < count; i += grid_stride()) sum += term(i);
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// total = sum of partials[0..n); then finish(total) in the one thread that has it.
template <class Finish>
__global__ void sum_partials_kernel(const double* partials, int n, Finish finish) {
  double sum = 0;
  for (int b = threadIdx.x; b < n; b += blockDim.x) sum += partials[b];
  sum = block_sum(sum);
  if (threadIdx.x == 0) finish(sum);
}

// Queues sum over i < count of term(i) and then finish(sum) on one device thread. `partials`
// must hold cuda_blocks_for(count) doubles.
template <class Term, class Finish>
void device_sum(size_t count, Term term, Finish finish, double* partials, cudaStream_t stream) {
  const int blocks = cuda_blocks_for(count);
  partial_sums_kernel<<<blocks, kCudaThreads, 0, stream>>>(count, term, partials);
  sum_partials_kernel<<<1, kCudaThreads, 0, stream>>>(partials, blocks, finish);
}

struct StoreDeviceSum {
  double* total;
  __device__ void operator()(double sum) const { *total = sum; }
};

// The sum, read back to the host: scratch from the stream-ordered pool; waits for the stream.
template <class Term>
double device_sum_to_host(size_t count, Term term, cudaStream_t stream) {
  double* scratch = nullptr;  // the total, then the blocks' partial sums
  SB_CUDA_CHECK(cudaMallocAsync(&scratch, (1 + cuda_blocks_for(count)) * sizeof(double), stream));
  device_sum(count, term, StoreDeviceSum{scratch}, scratch + 1, stream);
  SB_CUDA_CHECK(cudaGetLastError());
  double result = 0;
  SB_CUDA_CHECK(cudaMemcpyAsync(&result, scratch, sizeof(double), cudaMemcpyDeviceToHost, stream));
  SB_CUDA_CHECK(cudaFreeAsync(scratch, stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

}  // namespace sb
