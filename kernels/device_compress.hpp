#pragma once
// The element-wise device pieces of the compressed allreduce on GPU buffers (collectives/
// compress/device_compressors*), CUDA builds only: error feedback's arithmetic, the scales of QSGD
// and TernGrad, and the decoding of dense and byte-level payloads, each adding into a gradient in
// the order the host decoding does, so that both give the same floats.
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.hpp"
#include "kernels/tensor_chunks.hpp"

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace sb {

// out = a + b; out = a - b; x *= factor.
void add_cuda(const float* a, const float* b, float* out, size_t count, CUstream_st* stream);
void subtract_cuda(const float* a, const float* b, float* out, size_t count, CUstream_st* stream);
void scale_cuda(float* x, size_t count, float factor, CUstream_st* stream);
// The scale of every tensor of a chunked buffer (kernels/tensor_chunks.hpp), written to
// scales[t] on the device with no wait for the host: QSGD's ||x||_2, or TernGrad's clipped max
// (kernels/quantise.hpp), from sums in double, deterministic. `partials`: 3 doubles a chunk of
// device scratch.
enum class TensorScale { l2_norm, terngrad };
void tensor_scales_cuda(const float* x, const DeviceTensorChunks& chunks, TensorScale kind, double* partials,
                        float* scales, CUstream_st* stream);
// to[run.to + i] = from[run.from + i] (or += where `add`) for every run of `runs` (device
// memory, `count` of them, each at most kTensorChunkValues long, as merge_and_cut_runs cuts
// them), in one launch: a block a run.
void copy_runs_cuda(const float* from, float* to, const FloatRun* runs, size_t count, bool add, CUstream_st* stream);
// out[i] += payload[i] widened to fp32; payload of float32, float16 or bfloat16.
void add_widened_cuda(const void* payload, DataType type, size_t count, float* out, CUstream_st* stream);
// norms[b] = ||x[b span, (b + 1) span)||_2 as fp32, for every bucket of `span` values (the last
// one may be short): QSGD's scales, written on the device (norms 4-byte aligned).
void bucket_norms_cuda(const float* x, size_t count, size_t span, float* norms, CUstream_st* stream);
// One [fp32 scale per bucket][count int8 levels] payload (at any byte; `bucket` as QSGD's,
// kernels/quantise.hpp): out[i] += (its bucket's scale / levels) level[i].
void add_levels_cuda(const unsigned char* payload, size_t count, size_t bucket, float levels, float* out,
                     CUstream_st* stream);
// The levels of a chunked buffer with a scale per tensor (the scales at any byte), in one launch:
// out[i] += (its tensor's scale / levels) level[i].
void tensor_add_levels_cuda(const unsigned char* scales, const int8_t* level, const DeviceTensorChunks& chunks,
                            float levels, float* out, CUstream_st* stream);

}  // namespace sb
