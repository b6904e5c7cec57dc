#pragma once
// Device helpers every kernel file shares: the grid-stride loop's first index and stride, a
// block-wide sum in double (the reductions here sum in double, as their CPU references do) and a
// block-wide max.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

namespace sb {

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

// The largest v over the block (blockDim.x as block_sum's), valid in thread 0; NaNs are passed
// over, as fmaxf passes them.
__device__ __forceinline__ float block_max(float v) {
  __shared__ float warp_max[32];
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // warp_max may still be read by a previous call's thread 0
  if (lane == 0) warp_max[warp] = v;
  __syncthreads();
  v = -INFINITY;
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_max[lane] : -INFINITY;
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

// The sum of v over the block, returned to every thread.
__device__ __forceinline__ double block_total(double v) {
  __shared__ double total;
  v = block_sum(v);
  if (threadIdx.x == 0) total = v;
  __syncthreads();
  v = total;
  __syncthreads();  // before a later call overwrites it
  return v;
}

}  // namespace sb
