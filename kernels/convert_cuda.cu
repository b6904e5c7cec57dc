// The conversions of kernels/convert.hpp on device memory: the same element functions as the CPU
// loops, in one grid-stride kernel per direction.
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/convert.hpp"

namespace sb {
namespace {

template <class In, class Out, Out (*Convert)(In)>
__global__ void convert_kernel(const In* in, Out* out, size_t count) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    out[i] = Convert(in[i]);
}

__device__ float16 to_half(float f) { return to_float16(f); }
__device__ bfloat16 to_bf16(float f) { return to_bfloat16(f); }
__device__ float from_half(float16 h) { return to_float(h); }
__device__ float from_bf16(bfloat16 b) { return to_float(b); }

template <class In, class Out, Out (*Convert)(In)>
void launch(const In* in, Out* out, size_t count, cudaStream_t stream) {
  if (count == 0) return;
  convert_kernel<In, Out, Convert><<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(in, out, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void to_float16_cuda(const float* in, float16* out, size_t count, cudaStream_t stream) {
  launch<float, float16, to_half>(in, out, count, stream);
}
void to_bfloat16_cuda(const float* in, bfloat16* out, size_t count, cudaStream_t stream) {
  launch<float, bfloat16, to_bf16>(in, out, count, stream);
}
void to_float_cuda(const float16* in, float* out, size_t count, cudaStream_t stream) {
  launch<float16, float, from_half>(in, out, count, stream);
}
void to_float_cuda(const bfloat16* in, float* out, size_t count, cudaStream_t stream) {
  launch<bfloat16, float, from_bf16>(in, out, count, stream);
}

}  // namespace sb
