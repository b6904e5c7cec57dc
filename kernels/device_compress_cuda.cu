// The kernels of kernels/device_compress.hpp: grid-stride loops, and reductions for QSGD's and
// TernGrad's scales.
#include <cmath>

#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"
#include "kernels/device_compress.hpp"
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

// The sum, sum of squares (in double) and largest magnitude of each chunk (kernels/
// tensor_chunks.hpp), one block a chunk, into partials[3c .. 3c + 2]: the first of the two passes
// of tensor_scales_cuda, whose second adds each tensor's chunks. Both add in a fixed order, so
// the same input gives the same scales on every run.
__global__ void chunk_moments_kernel(const float* x, DeviceTensorChunks chunks, double* partials) {
  const uint32_t c = blockIdx.x;
  double sum = 0, squares = 0;
  float largest = 0;
  for (uint64_t i = chunks.begin[c] + threadIdx.x; i < chunks.begin[c + 1]; i += blockDim.x) {
    const float v = x[i];
    sum += v;
    squares += static_cast<double>(v) * v;
    largest = fmaxf(largest, fabsf(v));
  }
  sum = block_sum(sum);
  squares = block_sum(squares);
  largest = block_max(largest);
  if (threadIdx.x == 0) {
    partials[3 * size_t{c}] = sum;
    partials[3 * size_t{c} + 1] = squares;
    partials[3 * size_t{c} + 2] = largest;
  }
}

// One block a tensor: its chunks' moments added, then its scale, rounded to fp32 as the host
// rounds it (the host adds in another order, which can move the double sums' last bit, and
// rarely the float's).
__global__ void tensor_scales_kernel(const double* partials, DeviceTensorChunks chunks, TensorScale kind,
                                     float* scales) {
  const uint32_t t = blockIdx.x, first = chunks.first_chunk[t], end = chunks.first_chunk[t + 1];
  double sum = 0, squares = 0;
  float largest = 0;
  for (uint32_t c = first + threadIdx.x; c < end; c += blockDim.x) {
    sum += partials[3 * size_t{c}];
    squares += partials[3 * size_t{c} + 1];
    largest = fmaxf(largest, static_cast<float>(partials[3 * size_t{c} + 2]));
  }
  sum = block_sum(sum);
  squares = block_sum(squares);
  largest = block_max(largest);
  if (threadIdx.x != 0) return;
  const size_t count = chunks.begin[end] - chunks.begin[first];
  scales[t] = kind == TensorScale::l2_norm ? static_cast<float>(sqrt(squares))
                                           : terngrad_scale(sum, squares, largest, count);
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

// One block per chunk: out[i] += (its tensor's scale / levels) level[i].
__global__ void tensor_add_levels_kernel(const unsigned char* scales, const int8_t* level, DeviceTensorChunks chunks,
                                         float levels, float* out) {
  const uint32_t c = blockIdx.x;
  float scale;  // another rank's scales need not be aligned
  memcpy(&scale, scales + chunks.tensor_of[c] * sizeof(float), sizeof scale);
  for (uint64_t i = chunks.begin[c] + threadIdx.x; i < chunks.begin[c + 1]; i += blockDim.x)
    out[i] += scale / levels * static_cast<float>(level[i]);
}

__global__ void copy_runs_kernel(const float* from, float* to, const FloatRun* runs, bool add) {
  const FloatRun run = runs[blockIdx.x];
  for (uint64_t i = threadIdx.x; i < run.count; i += blockDim.x) {
    if (add) to[run.to + i] += from[run.from + i];
    else to[run.to + i] = from[run.from + i];
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

void tensor_scales_cuda(const float* x, const DeviceTensorChunks& chunks, TensorScale kind, double* partials,
                        float* scales, cudaStream_t stream) {
  if (chunks.tensors == 0) return;
  if (chunks.chunks > 0) chunk_moments_kernel<<<chunks.chunks, kCudaThreads, 0, stream>>>(x, chunks, partials);
  SB_CUDA_CHECK(cudaGetLastError());
  tensor_scales_kernel<<<chunks.tensors, kCudaThreads, 0, stream>>>(partials, chunks, kind, scales);
  SB_CUDA_CHECK(cudaGetLastError());
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
  add_levels_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(payload, level, count, scale_span(bucket, count), levels,
                                                                out);
  SB_CUDA_CHECK(cudaGetLastError());
}

void copy_runs_cuda(const float* from, float* to, const FloatRun* runs, size_t count, bool add, cudaStream_t stream) {
  if (count == 0) return;
  SB_CHECK(count <= 0x7fffffff, "copy_runs_cuda: over 2^31 runs");
  copy_runs_kernel<<<static_cast<unsigned>(count), kCudaThreads, 0, stream>>>(from, to, runs, add);
  SB_CUDA_CHECK(cudaGetLastError());
}

void tensor_add_levels_cuda(const unsigned char* scales, const int8_t* level, const DeviceTensorChunks& chunks,
                            float levels, float* out, cudaStream_t stream) {
  if (chunks.chunks == 0) return;
  tensor_add_levels_kernel<<<chunks.chunks, kCudaThreads, 0, stream>>>(scales, level, chunks, levels, out);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb
