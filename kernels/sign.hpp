#pragma once
// Sign payloads: signSGD / EF-signSGD's [fp32 scale][a sign bit per value], and 1-bit SGD's
// [two fp32 means per chunk of kOneBitChunk values][a bit per value]. Bit k of byte j is value
// 8j + k's. The element rules are here for the host compressors and the CUDA kernels
// (sign_cuda.cu, CUDA builds only) alike; the payloads they make are byte for byte the same.
#include <cstddef>
#include <cstdint>

#include "kernels/host_device.hpp"

#if SB_HAVE_CUDA
struct CUstream_st;  // cudaStream_t, without the CUDA headers
#endif

namespace sb {

inline constexpr size_t kOneBitChunk = 512;

// signSGD's bit: the sign bit itself (so -0 and -NaN count as negative).
SB_HD uint32_t sign_bit(uint32_t word) { return word >> 31; }
// 1-bit SGD's bit: 1 where the float with these bits is < 0 (not -0, not NaN). Negative floats
// other than -0 and NaN are exactly the words 0x80000001..0xff800000: integer work, which
// vectorises without branches.
SB_HD uint32_t below_zero_bit(uint32_t word) { return word - 0x80000001u < 0x7f800000u; }

SB_HD size_t onebit_chunks(size_t count) { return (count + kOneBitChunk - 1) / kOneBitChunk; }

// signSGD's majority vote for one value, `negatives` of the `nranks` ranks having sent its sign
// bit: the ranks' mean magnitude with the sign most of them sent, 0 on a tie.
SB_HD float majority_value(int negatives, int nranks, float magnitude) {
  const int vote = nranks - 2 * negatives;
  return vote > 0 ? magnitude : vote < 0 ? -magnitude : 0.0f;
}

#if SB_HAVE_CUDA
// Every call is queued on `stream`; none waits.
// payload = [mean |x| as fp32][sign bits].
void scaled_sign_cuda(const float* values, size_t count, unsigned char* payload, CUstream_st* stream);
// out[i] += bit i ? -scale : scale, for one payload (which may start at any byte).
void add_scaled_sign_cuda(const unsigned char* payload, size_t count, float* out, CUstream_st* stream);
// out[i] = the sign most of the nranks payloads (payload_bytes apart) sent for i, 0 on a tie,
// times the mean of their scales: signSGD's majority vote.
void majority_vote_cuda(const unsigned char* payloads, int nranks, size_t payload_bytes, size_t count, float* out,
                        CUstream_st* stream);
// payload = per chunk [mean of its values >= 0 (not negative)][mean of its negative ones], then
// the below-zero bits; a mean of no values is 0.
void onebit_cuda(const float* values, size_t count, unsigned char* payload, CUstream_st* stream);
// out[i] += bit i ? its chunk's negative mean : its positive mean.
void add_onebit_cuda(const unsigned char* payload, size_t count, float* out, CUstream_st* stream);
#endif

}  // namespace sb
