#pragma once
// Device-side access to an Elements operand: every value is read and written as fp32, converted
// with the round-to-nearest-even functions of kernels/float16.hpp. The type switch is uniform
// across a launch, so it costs a predictable branch, not divergence; the kernels that use it are
// bound by memory traffic, not by instructions.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"
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

// The launch of an element-wise pass over rows x channels (channels-last) in which every thread
// keeps one channel: `threads` = lanes x channels threads, thread t taking channel t % channels
// and the elements t, t + threads, t + 2 threads, ... (all of that channel, as threads is a
// multiple of channels). Per-channel values (batch norm's scale, a bias) are then loaded once into
// registers, and no element's index is divided to find its channel.
struct ChannelLanes {
  unsigned blocks = 1;
  size_t threads = 0;
};

inline ChannelLanes channel_lanes(size_t rows, size_t channels) {
  constexpr size_t kMostThreads = size_t{4096} * kCudaThreads;  // cuda_blocks_for's cap
  const size_t lanes = std::max<size_t>(1, std::min(rows, kMostThreads / std::max<size_t>(channels, 1)));
  const size_t threads = lanes * channels;
  return {static_cast<unsigned>(std::max<size_t>(1, (threads + kCudaThreads - 1) / kCudaThreads)), threads};
}

}  // namespace sb::models::gpu
