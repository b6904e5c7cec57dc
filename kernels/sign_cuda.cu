// The sign payloads of kernels/sign.hpp on device memory. A thread packs a byte (8 values) of
// bits; 1-bit SGD gives each chunk of 512 values a block, whose threads add the chunk's two sums
// in double as the host does. Payloads received from other ranks start at any byte, so their
// fp32 figures are read with memcpy.
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"
#include "kernels/device_sum.cuh"
#include "kernels/sign.hpp"

namespace sb {
namespace {

__device__ __forceinline__ float read_float(const unsigned char* at) {
  float x;
  memcpy(&x, at, sizeof x);
  return x;
}

__device__ __forceinline__ uint32_t bit_of(const unsigned char* bits, size_t i) { return (bits[i / 8] >> (i % 8)) & 1u; }

struct Magnitude {
  const float* values;
  __device__ double operator()(size_t i) const { return fabsf(values[i]); }
};

// scale = sum / count, written to the payload's head (our own payload: aligned).
struct StoreMean {
  float* scale;
  size_t count;
  __device__ void operator()(double sum) const { *scale = count ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f; }
};

__global__ void pack_sign_bits_kernel(const float* values, size_t count, unsigned char* bits) {
  for (size_t j = grid_first(); j < (count + 7) / 8; j += grid_stride()) {
    uint32_t byte = 0;
    for (size_t k = 0; k < 8 && 8 * j + k < count; ++k) byte |= sign_bit(__float_as_uint(values[8 * j + k])) << k;
    bits[j] = static_cast<unsigned char>(byte);
  }
}

__global__ void add_scaled_sign_kernel(const unsigned char* payload, size_t count, float* out) {
  const float scale = read_float(payload);
  const unsigned char* bits = payload + sizeof(float);
  for (size_t i = grid_first(); i < count; i += grid_stride()) out[i] += bit_of(bits, i) ? -scale : scale;
}

__global__ void majority_vote_kernel(const unsigned char* payloads, int nranks, size_t payload_bytes, size_t count,
                                     float* out) {
  double scales = 0;  // in rank order, as the host adds them
  for (int r = 0; r < nranks; ++r) scales += read_float(payloads + static_cast<size_t>(r) * payload_bytes);
  const float magnitude = static_cast<float>(scales / nranks);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    int negatives = 0;
    for (int r = 0; r < nranks; ++r)
      negatives += bit_of(payloads + static_cast<size_t>(r) * payload_bytes + sizeof(float), i) ? 1 : 0;
    out[i] = majority_value(negatives, nranks, magnitude);
  }
}

// One block per chunk: kOneBitChunk / kCudaThreads values a thread for the sums, and the
// chunk's bytes of bits from its first threads.
__global__ void onebit_kernel(const float* values, size_t count, unsigned char* payload) {
  const size_t chunk = blockIdx.x, begin = chunk * kOneBitChunk;
  const size_t end = begin + kOneBitChunk < count ? begin + kOneBitChunk : count;
  double positive = 0, negative = 0, negatives = 0;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const uint32_t below = below_zero_bit(__float_as_uint(values[i]));
    (below ? negative : positive) += values[i];
    negatives += below;
  }
  positive = block_total(positive);
  negative = block_total(negative);
  negatives = block_total(negatives);
  float* means = reinterpret_cast<float*>(payload) + 2 * chunk;
  if (threadIdx.x == 0) {
    const double positives = static_cast<double>(end - begin) - negatives;
    means[0] = positives > 0 ? static_cast<float>(positive / positives) : 0.0f;
    means[1] = negatives > 0 ? static_cast<float>(negative / negatives) : 0.0f;
  }
  unsigned char* bits = payload + onebit_chunks(count) * 2 * sizeof(float) + begin / 8;
  for (size_t j = threadIdx.x; j < (end - begin + 7) / 8; j += blockDim.x) {
    uint32_t byte = 0;
    for (size_t k = 0; k < 8 && begin + 8 * j + k < end; ++k)
      byte |= below_zero_bit(__float_as_uint(values[begin + 8 * j + k])) << k;
    bits[j] = static_cast<unsigned char>(byte);
  }
}

__global__ void add_onebit_kernel(const unsigned char* payload, size_t count, float* out) {
  const unsigned char* bits = payload + onebit_chunks(count) * 2 * sizeof(float);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const unsigned char* means = payload + i / kOneBitChunk * 2 * sizeof(float);
    out[i] += bit_of(bits, i) ? read_float(means + sizeof(float)) : read_float(means);
  }
}

void check_launch() { SB_CUDA_CHECK(cudaGetLastError()); }

}  // namespace

void scaled_sign_cuda(const float* values, size_t count, unsigned char* payload, cudaStream_t stream) {
  double* partials = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&partials, cuda_blocks_for(count) * sizeof(double), stream));
  device_sum(count, Magnitude{values}, StoreMean{reinterpret_cast<float*>(payload), count}, partials, stream);
  SB_CUDA_CHECK(cudaFreeAsync(partials, stream));
  if (count > 0) pack_sign_bits_kernel<<<cuda_blocks_for((count + 7) / 8), kCudaThreads, 0, stream>>>(values, count, payload + sizeof(float));
  check_launch();
}

void add_scaled_sign_cuda(const unsigned char* payload, size_t count, float* out, cudaStream_t stream) {
  if (count == 0) return;
  add_scaled_sign_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(payload, count, out);
  check_launch();
}

void majority_vote_cuda(const unsigned char* payloads, int nranks, size_t payload_bytes, size_t count, float* out,
                        cudaStream_t stream) {
  if (count == 0) return;
  majority_vote_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(payloads, nranks, payload_bytes, count, out);
  check_launch();
}

void onebit_cuda(const float* values, size_t count, unsigned char* payload, cudaStream_t stream) {
  if (count == 0) return;
  onebit_kernel<<<static_cast<unsigned>(onebit_chunks(count)), kCudaThreads, 0, stream>>>(values, count, payload);
  check_launch();
}

void add_onebit_cuda(const unsigned char* payload, size_t count, float* out, cudaStream_t stream) {
  if (count == 0) return;
  add_onebit_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(payload, count, out);
  check_launch();
}

}  // namespace sb
