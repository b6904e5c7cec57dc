#pragma once
// Sparse payloads on device memory (CUDA builds only; the host compressors do the same in plain
// loops): values gathered at indices, and scattered back added into a dense gradient. An index
// of kNoIndex is an empty slot (the threshold compressor's, when fewer than k values pass).
#include <cstddef>
#include <cstdint>

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace sb {

inline constexpr uint32_t kNoIndex = UINT32_MAX;

// out[j] = values[indices[j]] for j < k (values of any 4-byte type: fp32 or uint32 indices).
void gather_cuda(const float* values, const uint32_t* indices, size_t k, float* out, CUstream_st* stream);
void gather_cuda(const uint32_t* values, const uint32_t* indices, size_t k, uint32_t* out, CUstream_st* stream);
// out[indices[j]] += sent[j] for j < k, skipping kNoIndex. The indices of one call must be
// distinct (each rank's are): no two threads then touch one element, and no atomics are needed.
void scatter_add_cuda(const uint32_t* indices, const float* sent, size_t k, float* out, CUstream_st* stream);

}  // namespace sb
