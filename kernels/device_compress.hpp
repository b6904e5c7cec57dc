#pragma once
// The element-wise device pieces of the compressed allreduce on GPU buffers (collectives/
// compress/device_compressors*), CUDA builds only: error feedback's arithmetic, the scales of QSGD
// and TernGrad, and the decoding of dense and byte-level payloads, each adding into a gradient in
// the order the host decoding does, so that both give the same floats.
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.hpp"

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace sb {

// out = a + b; out = a - b; x *= factor.
void add_cuda(const float* a, const float* b, float* out, size_t count, CUstream_st* stream);
void subtract_cuda(const float* a, const float* b, float* out, size_t count, CUstream_st* stream);
void scale_cuda(float* x, size_t count, float factor, CUstream_st* stream);
// sum x, sum x^2 (in double, deterministic) and max |x|, returned to the host: these wait for the
// stream.
double sum_cuda(const float* x, size_t count, CUstream_st* stream);
double sum_of_squares_cuda(const float* x, size_t count, CUstream_st* stream);
float max_magnitude_cuda(const float* x, size_t count, CUstream_st* stream);
// out[i] += payload[i] widened to fp32; payload of float32, float16 or bfloat16.
void add_widened_cuda(const void* payload, DataType type, size_t count, float* out, CUstream_st* stream);
// norms[b] = ||x[b span, (b + 1) span)||_2 as fp32, for every bucket of `span` values (the last
// one may be short): QSGD's scales, written on the device (norms 4-byte aligned).
void bucket_norms_cuda(const float* x, size_t count, size_t span, float* norms, CUstream_st* stream);
// One [fp32 scale per bucket][count int8 levels] payload (at any byte; `bucket` as QSGD's,
// kernels/quantise.hpp): out[i] += (its bucket's scale / levels) level[i].
void add_levels_cuda(const unsigned char* payload, size_t count, size_t bucket, float levels, float* out,
                     CUstream_st* stream);
// The same with the scales (at any byte) and the levels apart: one tensor's of a payload with a
// scale per tensor.
void add_levels_cuda(const unsigned char* scales, const int8_t* level, size_t count, size_t bucket, float levels,
                     float* out, CUstream_st* stream);

}  // namespace sb
