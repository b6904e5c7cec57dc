#pragma once
// Whole arrays converted between fp32 and the 16-bit types, rounding to nearest even: the element
// functions of kernels/float16.hpp in a CPU loop here (convert_cpu.cpp) and in a CUDA grid-stride
// loop (convert_cuda.cu). The fp16 and bf16 compressors and mixed precision are made of these.
#include <cstddef>

#include "kernels/float16.hpp"

#if SB_HAVE_CUDA
struct CUstream_st;  // cudaStream_t, without the CUDA headers
#endif

namespace sb {

void to_float16_cpu(const float* in, float16* out, size_t count);
void to_bfloat16_cpu(const float* in, bfloat16* out, size_t count);
void to_float_cpu(const float16* in, float* out, size_t count);
void to_float_cpu(const bfloat16* in, float* out, size_t count);

#if SB_HAVE_CUDA
void to_float16_cuda(const float* in, float16* out, size_t count, CUstream_st* stream);
void to_bfloat16_cuda(const float* in, bfloat16* out, size_t count, CUstream_st* stream);
void to_float_cuda(const float16* in, float* out, size_t count, CUstream_st* stream);
void to_float_cuda(const bfloat16* in, float* out, size_t count, CUstream_st* stream);
#endif

}  // namespace sb
