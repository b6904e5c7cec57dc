// The reductions of kernels/reduce.hpp on device memory: the same element functions (combine,
// divide) as the CPU loops, in grid-stride kernels with the op a template parameter.
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

template <class T, RedOp Op>
__global__ void reduce_into_kernel(T* accumulator, const T* input, size_t count) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    accumulator[i] = combine(Op, accumulator[i], input[i]);
}

template <class T>
__global__ void divide_kernel(T* values, size_t count, int divisor) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    values[i] = divide(values[i], divisor);
}

}  // namespace

void reduce_into_cuda(void* accumulator, const void* input, size_t count, DataType type, RedOp op,
                      cudaStream_t stream) {
  if (count == 0) return;
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    dispatch_op(op, [&](auto op_tag) {
      reduce_into_kernel<T, decltype(op_tag)::value><<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(
          static_cast<T*>(accumulator), static_cast<const T*>(input), count);
    });
  });
  SB_CUDA_CHECK(cudaGetLastError());
}

void divide_cuda(void* buffer, size_t count, DataType type, int divisor, cudaStream_t stream) {
  if (count == 0) return;
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    divide_kernel<T><<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(static_cast<T*>(buffer), count, divisor);
  });
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb
