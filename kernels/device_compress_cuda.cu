// The kernels of kernels/device_compress.hpp: grid-stride loops, and block reductions for the
// two scales.
#include <cmath>

#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/device_compress.hpp"

namespace sb {
namespace {

__device__ __forceinline__ size_t first() { return blockIdx.x * size_t{blockDim.x} + threadIdx.x; }
__device__ __forceinline__ size_t stride() { return size_t{gridDim.x} * blockDim.x; }

__global__ void add_kernel(const float* a, const float* b, float* out, size_t count) {
  for (size_t i = first(); i < count; i += stride()) out[i] = a[i] + b[i];
}
__global__ void subtract_kernel(const float* a, const float* b, float* out, size_t count) {
  for (size_t i = first(); i < count; i += stride()) out[i] = a[i] - b[i];
}
__global__ void scale_kernel(float* x, size_t count, float factor) {
  for (size_t i = first(); i < count; i += stride()) x[i] *= factor;
}

// Per block, then one atomic per block: kCudaThreads a block, a multiple of 32.
__global__ void sum_of_squares_kernel(const float* x, size_t count, double* total) {
  __shared__ double partial[kCudaThreads];
  double sum = 0;
  for (size_t i = first(); i < count; i += stride()) sum += static_cast<double>(x[i]) * x[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, partial[0]);
}

// Magnitudes are non-negative, so their bits order like unsigned integers: atomicMax on them.
__global__ void max_magnitude_kernel(const float* x, size_t count, unsigned* largest_bits) {
  __shared__ float partial[kCudaThreads];
  float largest = 0;
  for (size_t i = first(); i < count; i += stride()) largest = fmaxf(largest, fabsf(x[i]));
  partial[threadIdx.x] = largest;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicMax(largest_bits, __float_as_uint(partial[0]));
}

__global__ void decode_levels_kernel(const unsigned char* payloads, int nranks, size_t payload_bytes, size_t count,
                                     float levels, float factor, float* out) {
  for (size_t i = first(); i < count; i += stride()) {
    float sum = 0;
    for (int r = 0; r < nranks; ++r) {
      const unsigned char* payload = payloads + static_cast<size_t>(r) * payload_bytes;
      float scale;  // payloads of 4 + count bytes: the next rank's scale need not be aligned
      memcpy(&scale, payload, sizeof scale);
      const float unit = scale / levels;
      sum += unit * static_cast<float>(reinterpret_cast<const int8_t*>(payload + sizeof(float))[i]);
    }
    out[i] = sum * factor;
  }
}

int blocks(size_t count) { return cuda_blocks_for(count); }

}  // namespace

void add_cuda(const float* a, const float* b, float* out, size_t count, cudaStream_t stream) {
  if (count == 0) return;
  add_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(a, b, out, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void subtract_cuda(const float* a, const float* b, float* out, size_t count, cudaStream_t stream) {
  if (count == 0) return;
  subtract_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(a, b, out, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void scale_cuda(float* x, size_t count, float factor, cudaStream_t stream) {
  if (count == 0) return;
  scale_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, count, factor);
  SB_CUDA_CHECK(cudaGetLastError());
}

double sum_of_squares_cuda(const float* x, size_t count, cudaStream_t stream) {
  double* total = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&total, sizeof(double), stream));
  SB_CUDA_CHECK(cudaMemsetAsync(total, 0, sizeof(double), stream));
  if (count > 0) sum_of_squares_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, count, total);
  SB_CUDA_CHECK(cudaGetLastError());
  double result = 0;
  SB_CUDA_CHECK(cudaMemcpyAsync(&result, total, sizeof(double), cudaMemcpyDeviceToHost, stream));
  SB_CUDA_CHECK(cudaFreeAsync(total, stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

float max_magnitude_cuda(const float* x, size_t count, cudaStream_t stream) {
  unsigned* bits = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&bits, sizeof(unsigned), stream));
  SB_CUDA_CHECK(cudaMemsetAsync(bits, 0, sizeof(unsigned), stream));
  if (count > 0) max_magnitude_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, count, bits);
  SB_CUDA_CHECK(cudaGetLastError());
  unsigned result = 0;
  SB_CUDA_CHECK(cudaMemcpyAsync(&result, bits, sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  SB_CUDA_CHECK(cudaFreeAsync(bits, stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream));
  float largest;
  static_assert(sizeof largest == sizeof result);
  __builtin_memcpy(&largest, &result, sizeof largest);
  return largest;
}

void decode_levels_cuda(const unsigned char* payloads, int nranks, size_t payload_bytes, size_t count, float levels,
                        float factor, float* out, cudaStream_t stream) {
  if (count == 0) return;
  decode_levels_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(payloads, nranks, payload_bytes, count, levels,
                                                                    factor, out);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb
