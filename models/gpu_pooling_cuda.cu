// Max and global average pooling over channels-last tensors. One thread per output value in the
// forward passes and per input value in the backward ones, so that no two threads write the same
// element (no atomics, deterministic); consecutive threads take consecutive channels (coalesced).
// Max pooling's backward finds each window's argmax once first, into a byte per output.
#include <cstdint>

#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "models/gpu_elements.cuh"

namespace sb::models::gpu {
namespace {

__device__ __forceinline__ size_t at(const PoolShape& s, int64_t n, int64_t h, int64_t w, int64_t c) {
  return static_cast<size_t>(((n * s.h + h) * s.w + w) * s.c + c);
}

__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// The first maximum of output (n, p, q, c)'s window, as its offset i * kernel + j within the
// window (kernel <= 16, so it fits a byte); padding is skipped.
__device__ uint8_t window_argmax(const Elements& x, const PoolShape& s, int64_t n, int64_t p, int64_t q, int64_t c) {
  int best = 0;
  float best_value = 0;
  bool found = false;
  for (int i = 0; i < s.kernel; ++i) {
    const int64_t h = p * s.stride - s.pad + i;
    if (h < 0 || h >= s.h) continue;
    for (int j = 0; j < s.kernel; ++j) {
      const int64_t w = q * s.stride - s.pad + j;
      if (w < 0 || w >= s.w) continue;
      const float v = load(x, at(s, n, h, w, c));
      if (!found || v > best_value) {
        best = i * s.kernel + j;
        best_value = v;
        found = true;
      }
    }
  }
  return static_cast<uint8_t>(best);
}

__global__ void maxpool_forward_kernel(Elements x, Elements y, PoolShape s) {
  const size_t count = static_cast<size_t>(s.n * s.p * s.q * s.c);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const int64_t c = i % s.c, q = (i / s.c) % s.q, p = (i / (s.c * s.q)) % s.p, n = i / (s.c * s.q * s.p);
    const int offset = window_argmax(x, s, n, p, q, c);
    const int64_t h = p * s.stride - s.pad + offset / s.kernel, w = q * s.stride - s.pad + offset % s.kernel;
    store(y, i, load(x, at(s, n, h, w, c)));
  }
}

// Backward, first pass: each output's argmax offset, found once (the gather below would otherwise
// search each window again for every input it covers: up to 36 loads an input for 3 x 3, stride 2).
__global__ void maxpool_argmax_kernel(Elements x, PoolShape s, uint8_t* offsets) {
  const size_t count = static_cast<size_t>(s.n * s.p * s.q * s.c);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const int64_t c = i % s.c, q = (i / s.c) % s.q, p = (i / (s.c * s.q)) % s.p, n = i / (s.c * s.q * s.p);
    offsets[i] = window_argmax(x, s, n, p, q, c);
  }
}

// Second pass: gathers, for input (n, h, w, c), the dy of every window whose first maximum it is.
__global__ void maxpool_backward_kernel(const uint8_t* offsets, Elements dy, Elements dx, PoolShape s) {
  const size_t count = static_cast<size_t>(s.n * s.h * s.w * s.c);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const int64_t c = i % s.c, w = (i / s.c) % s.w, h = (i / (s.c * s.w)) % s.h, n = i / (s.c * s.w * s.h);
    // Outputs p whose window [p stride - pad, p stride - pad + kernel) holds h.
    const int64_t p_first = imax(0, (h + s.pad - s.kernel + s.stride) / s.stride);
    const int64_t p_last = imin(s.p - 1, (h + s.pad) / s.stride);
    const int64_t q_first = imax(0, (w + s.pad - s.kernel + s.stride) / s.stride);
    const int64_t q_last = imin(s.q - 1, (w + s.pad) / s.stride);
    float sum = 0;
    for (int64_t p = p_first; p <= p_last; ++p)
      for (int64_t q = q_first; q <= q_last; ++q) {
        const size_t out = static_cast<size_t>(((n * s.p + p) * s.q + q) * s.c + c);
        const int offset = offsets[out];
        if (p * s.stride - s.pad + offset / s.kernel == h && q * s.stride - s.pad + offset % s.kernel == w)
          sum += load(dy, out);
      }
    store(dx, i, sum);
  }
}

__global__ void avgpool_forward_kernel(Elements x, Elements y, int64_t n, int64_t plane, int64_t c) {
  const size_t count = static_cast<size_t>(n * c);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const int64_t image = i / c, channel = i % c;
    float sum = 0;
    for (int64_t k = 0; k < plane; ++k) sum += load(x, static_cast<size_t>((image * plane + k) * c + channel));
    store(y, i, sum / static_cast<float>(plane));
  }
}

__global__ void avgpool_backward_kernel(Elements dy, Elements dx, int64_t n, int64_t plane, int64_t c) {
  const size_t count = static_cast<size_t>(n * plane * c);
  const float inv = 1.0f / static_cast<float>(plane);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const int64_t channel = i % c, image = i / (plane * c);
    store(dx, i, load(dy, static_cast<size_t>(image * c + channel)) * inv);
  }
}

}  // namespace

void maxpool_forward(Elements x, Elements y, const PoolShape& s, Stream stream) {
  SB_CHECK(s.kernel >= 1 && s.kernel <= 16, "max pooling windows of 1 to 16 (an argmax offset fits a byte)");
  const size_t count = static_cast<size_t>(s.n * s.p * s.q * s.c);
  if (count == 0) return;
  maxpool_forward_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(x, y, s);
  SB_CUDA_CHECK(cudaGetLastError());
}

void maxpool_backward(Elements x, Elements dy, Elements dx, const PoolShape& s, Stream stream) {
  const size_t count = static_cast<size_t>(s.n * s.h * s.w * s.c);
  const size_t outputs = static_cast<size_t>(s.n * s.p * s.q * s.c);
  if (count == 0) return;
  SB_CHECK(s.kernel >= 1 && s.kernel <= 16, "max pooling windows of 1 to 16 (an argmax offset fits a byte)");
  if (outputs == 0) {
    fill(dx, count, 0.0f, stream);
    return;
  }
  uint8_t* offsets = nullptr;  // in stream order, so a recorded step holds it as a graph allocation
  SB_CUDA_CHECK(cudaMallocAsync(&offsets, outputs, stream));
  maxpool_argmax_kernel<<<cuda_blocks_for(outputs), kCudaThreads, 0, stream>>>(x, s, offsets);
  maxpool_backward_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(offsets, dy, dx, s);
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaFreeAsync(offsets, stream));
}

void global_avgpool_forward(Elements x, Elements y, int64_t n, int64_t plane, int64_t c, Stream stream) {
  if (n * c == 0) return;
  avgpool_forward_kernel<<<cuda_blocks_for(static_cast<size_t>(n * c)), kCudaThreads, 0, stream>>>(x, y, n, plane, c);
  SB_CUDA_CHECK(cudaGetLastError());
}

void global_avgpool_backward(Elements dy, Elements dx, int64_t n, int64_t plane, int64_t c, Stream stream) {
  if (n * plane * c == 0) return;
  avgpool_backward_kernel<<<cuda_blocks_for(static_cast<size_t>(n * plane * c)), kCudaThreads, 0, stream>>>(
      dy, dx, n, plane, c);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb::models::gpu
