#pragma once
// Device-side access to an Elements operand: every value is read and written as fp32, converted
// with the round-to-nearest-even functions of kernels/float16.hpp. The type switch is uniform
// across a launch, so it costs a predictable branch, not divergence; the kernels that use it are
// bound by memory traffic, not by instructions.
#include <cuda_runtime.h>

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

}  // namespace sb::models::gpu
