#pragma once
// Stochastic rounding to levels, as QSGD and TernGrad quantise: level[i] = sign(x) min(floor(
// |x| unit_inverse + u_i), s) with unit_inverse = s / scale (0 for a zero scale) and u_i uniform
// in [0, 1), an unbiased rounding of x / scale * s to an integer in [-s, s]. Each bucket of
// `bucket` consecutive values has its own scale (QSGD's buckets; one bucket of all the values for
// a scale per tensor). The uniforms are a hash of (key, i), so the CPU loop (quantise_cpu.cpp,
// vectorised) and the CUDA kernel (quantise_cuda.cu, a thread per value) give the same levels bit
// for bit.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/host_device.hpp"
#include "kernels/random.hpp"
#include "kernels/tensor_chunks.hpp"

#if SB_HAVE_CUDA
struct CUstream_st;  // cudaStream_t, without the CUDA headers
#endif

namespace sb {

// u_i: the top 24 bits of a 32-bit hash of i ^ the key's 32 bits (lowbias32, from C. Wellons'
// hash prospector). Two 32-bit multiplies, which every vector ISA has: the 64-bit mixer of
// kernels/random.hpp took four 64-bit ones per pair of values, which AVX2 emulates, and held the
// CPU loop to a tenth of memcpy's rate. Another key permutes the inputs, which the hash then
// decorrelates. The counter is i's low 32 bits: past 2^32 values (16 GiB of fp32) the uniforms
// repeat, which leaves every rounding unbiased.
SB_HD uint32_t quantise_key(uint64_t key) { return static_cast<uint32_t>(key ^ (key >> 32)); }

SB_HD float stochastic_uniform(uint32_t key, uint32_t i) {
  uint32_t x = i ^ key;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  // 24-bit integers: exact through int32, which converts to float in every vector ISA.
  return static_cast<float>(static_cast<int32_t>(x >> 8)) * (1.0f / 16777216.0f);
}

SB_HD int8_t stochastic_level(float x, float unit_inverse, float s, float u) {
  // The argument is >= 0, so truncation is floor.
  const float q = static_cast<float>(static_cast<int32_t>(fabsf(x) * unit_inverse + u));
  const float clamped = s < q ? s : q;
  return static_cast<int8_t>(x < 0 ? -clamped : clamped);
}

// QSGD's buckets: `bucket` consecutive values share a scale, 0 meaning one scale for the whole
// tensor. The span of a bucket, and how many scales a payload of count values carries, for the
// host quantisers and their device twins alike.
SB_HD size_t scale_span(size_t bucket, size_t count) { return bucket ? bucket : count ? count : 1; }
SB_HD size_t scale_count(size_t bucket, size_t count) {
  return bucket ? count / bucket + (count % bucket != 0) : 1;  // count + bucket - 1 could wrap
}

// TernGrad's scale from a tensor's sum, sum of squares and max |x|: the max clipped at 2.5
// standard deviations, as its paper clips gradients. Values beyond it round to +-1 with
// certainty, which is the clipping. Values that do not vary (one value, a constant tensor) keep
// the max: a clip at 0 would send nothing. For the host quantiser and its device twin alike.
SB_HD float terngrad_scale(double sum, double sum_of_squares, float largest, size_t count) {
  if (count == 0) return 0.0f;
  const double n = static_cast<double>(count), mean = sum / n;
  const double variance = sum_of_squares / n - mean * mean;
  if (!(variance > 0)) return largest;
  const float clip = static_cast<float>(2.5 * ::sqrt(variance));  // ::sqrt: nvcc has it for the device
  return largest < clip ? largest : clip;
}

// The rounding's unit for a scale: s / scale, 0 for a zero scale (every level 0 then).
SB_HD float unit_inverse_of(float scale, float s) { return scale > 0 ? s / scale : 0.0f; }

// Tensor t's rounding key from the step's, where each tensor of a buffer has its own scale: no
// two tensors then draw the same uniforms at the same offsets.
SB_HD uint64_t tensor_rounding_key(uint64_t key, size_t t) { return random_key(key, 0x74656e736f72, t); }

// level[i] for value i of count, with the scale of its bucket, scales[i / bucket] (bucket 0: one
// bucket of all the values). The CUDA version takes device pointers. `first`: where values[0]
// lies in the run the key was drawn for (the uniforms' counter), so that a run rounded in pieces
// draws what it would whole.
void stochastic_levels_cpu(const float* values, size_t count, size_t bucket, const float* scales, float s, uint64_t key,
                           int8_t* level, size_t first = 0);
#if SB_HAVE_CUDA
void stochastic_levels_cuda(const float* values, size_t count, size_t bucket, const float* scales, float s, uint64_t key,
                            int8_t* level, CUstream_st* stream);
// The same for every tensor of a chunked buffer (kernels/tensor_chunks.hpp) in one launch: tensor
// t with scales[t] (device memory), its counter from its own first value, and its own key,
// tensor_rounding_key(key, t), where key_per_tensor (else the step's key for all: one tensor).
void tensor_levels_cuda(const float* values, const DeviceTensorChunks& chunks, const float* scales, float s,
                        uint64_t key, bool key_per_tensor, int8_t* level, CUstream_st* stream);
#endif

}  // namespace sb
