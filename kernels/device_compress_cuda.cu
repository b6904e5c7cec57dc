// The kernels of kernels/device_compress.hpp: grid-stride loops, and reductions for the two
// scales.
#include <cmath>

#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"
#include "kernels/device_compress.hpp"
#include "kernels/device_sum.cuh"
#include "kernels/float16.hpp"
#include "kernels/quantise.hpp"

namespace sb {
namespace {

__global__ void add_kernel(const float* a, const float* b, float* out, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) out[i] = a[i] + b[i];
}
__global__ void subtract_kernel(const float* a, const float* b, float* out, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) out[i] = a[i] - b[i];
}
__global__ void scale_kernel(float* x, size_t count, float factor) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) x[i] *= factor;
}

struct Value {
  const float* x;
  __device__ double operator()(size_t i) const { return x[i]; }
};

struct Square {
  const float* x;
  __device__ double operator()(size_t i) const { return static_cast<double>(x[i]) * x[i]; }
};

// Magnitudes are non-negative, so their bits order like unsigned integers: atomicMax on them
// (max is exact in any order).
__global__ void max_magnitude_kernel(const float* x, size_t count, unsigned* largest_bits) {
  __shared__ float partial[kCudaThreads];
  float largest = 0;
  for (size_t i = grid_first(); i < count; i += grid_stride()) largest = fmaxf(largest, fabsf(x[i]));
  partial[threadIdx.x] = largest;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicMax(largest_bits, __float_as_uint(partial[0]));
}

// QSGD's bucket norms, one block per bucket: each thread sums its strided squares in double, the
// block adds the partial sums, and thread 0 rounds the root to fp32 as the host does (the host
// adds in another order, which can move the double sum's last bit, and rarely the float's).
__global__ void bucket_norms_kernel(const float* x, size_t count, size_t span, float* norms) {
  __shared__ double partial[kCudaThreads];
  const size_t begin = blockIdx.x * span;
  const size_t end = begin + span < count ? begin + span : count;
  double sum = 0;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) sum += static_cast<double>(x[i]) * x[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) norms[blockIdx.x] = static_cast<float>(sqrt(partial[0]));
}

template <class Narrow>
__global__ void add_widened_kernel(const Narrow* payload, size_t count, float* out) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) out[i] += to_float(payload[i]);
}
__global__ void add_float_kernel(const float* payload, size_t count, float* out) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) out[i] += payload[i];
}

__global__ void add_levels_kernel(const unsigned char* scales, const int8_t* level, size_t count, size_t span,
                                  float levels, float* out) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    float scale;  // payloads of 4 B + count bytes: another rank's scales need not be aligned
    memcpy(&scale, scales + i / span * sizeof(float), sizeof scale);
    out[i] += scale / levels * static_cast<float>(level[i]);
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

double sum_cuda(const float* x, size_t count, cudaStream_t stream) { return device_sum_to_host(count, Value{x}, stream); }

double sum_of_squares_cuda(const float* x, size_t count, cudaStream_t stream) {
  return device_sum_to_host(count, Square{x}, stream);
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

void add_widened_cuda(const void* payload, DataType type, size_t count, float* out, cudaStream_t stream) {
  if (count == 0) return;
  switch (type) {
    case DataType::float32:
      add_float_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(static_cast<const float*>(payload), count, out);
      break;
    case DataType::float16:
      add_widened_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(static_cast<const float16*>(payload), count, out);
      break;
    case DataType::bfloat16:
      add_widened_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(static_cast<const bfloat16*>(payload), count, out);
      break;
    default: SB_CHECK(false, "add_widened_cuda: payloads are float32, float16 or bfloat16");
  }
  SB_CUDA_CHECK(cudaGetLastError());
}

void bucket_norms_cuda(const float* x, size_t count, size_t span, float* norms, cudaStream_t stream) {
  const size_t buckets = scale_count(span, count);
  if (buckets == 0) return;
  SB_CHECK(buckets <= 0x7fffffff, "QSGD: more than 2^31 buckets in one tensor");
  bucket_norms_kernel<<<static_cast<unsigned>(buckets), kCudaThreads, 0, stream>>>(x, count, span, norms);
  SB_CUDA_CHECK(cudaGetLastError());
}

void add_levels_cuda(const unsigned char* payload, size_t count, size_t bucket, float levels, float* out,
                     cudaStream_t stream) {
  if (count == 0) return;
  const int8_t* level = reinterpret_cast<const int8_t*>(payload + scale_count(bucket, count) * sizeof(float));
  add_levels_cuda(payload, level, count, bucket, levels, out, stream);
}

void add_levels_cuda(const unsigned char* scales, const int8_t* level, size_t count, size_t bucket, float levels,
                     float* out, cudaStream_t stream) {
  if (count == 0) return;
  add_levels_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(scales, level, count, scale_span(bucket, count), levels,
                                                                out);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb
