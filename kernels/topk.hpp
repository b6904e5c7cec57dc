#pragma once
// Exact top-k by magnitude: the indices of the k elements of largest |x|, in ascending order.
// Ties at the k-th magnitude go to the lower index, so the answer is one and deterministic (every
// rank of a compressed allreduce picks the same elements from the same data). NaN ranks above
// every number (its magnitude bits are the largest), so a NaN gradient is never hidden.
//
// The CPU version is a radix select on the magnitude's bits rather than a comparison sort or
// std::nth_element: one pass builds a histogram of the top 11 bits (sign dropped), which names
// the bin the k-th magnitude falls in; a second pass writes out every index above that bin and
// gathers the (few) candidates inside it; the candidates are settled exactly among themselves.
// Two streaming reads of the data, no writes to it. The histogram is kept four times over and
// the second pass skips chunks with nothing in them (kernels/magnitude_scan.hpp): together 1.4x
// to 1.7x the speed of the plain two-pass loops on one AVX2 core, 3-4 GB/s.
#include <cstddef>
#include <cstdint>
#include <vector>

#if SB_HAVE_CUDA
struct CUstream_st;  // cudaStream_t, without the CUDA headers
#endif

namespace sb {

// Writes the k indices to `indices` (which must hold k) and returns k. Requires k <= count.
size_t topk_cpu(const float* values, size_t count, size_t k, uint32_t* indices);

#if SB_HAVE_CUDA
// The same k indices on device memory (topk_cuda.cu: a radix select, 8 bits a pass, and two
// stream compactions), into `indices` (device, room for k). Queued on `stream`, no host wait;
// scratch comes from the stream-ordered pool.
void topk_cuda(const float* values, size_t count, size_t k, uint32_t* indices, CUstream_st* stream);
#endif

// The same by sorting (key descending, index ascending): the reference the tests check against.
std::vector<uint32_t> topk_reference(const float* values, size_t count, size_t k);

}  // namespace sb
