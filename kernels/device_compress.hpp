#pragma once
// The device pieces of the compressed allreduce on GPU buffers (collectives/compress/
// device_compressed_allreduce.hpp), CUDA builds only: the element-wise arithmetic of error
// feedback, the scales of QSGD and TernGrad, and the decoding of gathered byte-level payloads in
// the order the host decoding sums them (rank 0 first), so that both give the same floats.
#include <cstddef>
#include <cstdint>

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace sb {

// out = a + b; out = a - b; x *= factor.
void add_cuda(const float* a, const float* b, float* out, size_t count, CUstream_st* stream);
void subtract_cuda(const float* a, const float* b, float* out, size_t count, CUstream_st* stream);
void scale_cuda(float* x, size_t count, float factor, CUstream_st* stream);
// sum x^2 (in double) and max |x|, returned to the host: these wait for the stream.
double sum_of_squares_cuda(const float* x, size_t count, CUstream_st* stream);
float max_magnitude_cuda(const float* x, size_t count, CUstream_st* stream);
// payloads: nranks payloads of payload_bytes each, laid out [fp32 scale][count int8 levels];
// out[i] = (sum over r in order of (scale_r / levels) level_r[i]) * factor.
void decode_levels_cuda(const unsigned char* payloads, int nranks, size_t payload_bytes, size_t count, float levels,
                        float factor, float* out, CUstream_st* stream);

}  // namespace sb
