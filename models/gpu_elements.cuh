#pragma once
// Device-side access to an Elements operand: every value is read and written as fp32, converted
// with the round-to-nearest-even functions of kernels/float16.hpp. The type switch is uniform
// across a launch, so it costs a predictable branch, not divergence; the kernels that use it are
// bound by memory traffic, not by instructions.
#include <cuda_runtime.h>

#include "kernels/cuda_grid.hpp"
#include "kernels/float16.hpp"
#include "models/gpu_kernels.hpp"

namespace sb::models::gpu {

__device__ __forceinline__ float load(const Elements& e, size_t i) {
  switch (e.type) {
    case ElementType::f16: return to_float(static_cast<const float16*>(e.data)[i]);
    case ElementType::bf16: return to_float(static_cast<const bfloat16*>(e.data)[i]);
    default: return static_cast<const float*>(e.data)[i];
  }
}

__device__ __forceinline__ void store(const Elements& e, size_t i, float v) {
  switch (e.type) {
    case ElementType::f16: static_cast<float16*>(e.data)[i] = to_float16(v); break;
    case ElementType::bf16: static_cast<bfloat16*>(e.data)[i] = to_bfloat16(v); break;
    default: static_cast<float*>(e.data)[i] = v; break;
  }
}

// The first index of this thread in a grid-stride loop, and the stride.
__device__ __forceinline__ size_t grid_first() { return blockIdx.x * size_t{blockDim.x} + threadIdx.x; }
__device__ __forceinline__ size_t grid_stride() { return size_t{gridDim.x} * blockDim.x; }

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), valid in thread 0.
__device__ __forceinline__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // warp_sums may still be read by a previous call's thread 0
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = 0;
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}

}  // namespace sb::models::gpu
