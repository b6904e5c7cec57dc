// Exact top-k on the GPU (kernels/topk.hpp): the same k indices as topk_cpu, bit for bit.
//
// A radix select on the 31-bit magnitude key, 8 bits a pass from the top: each pass histograms
// the digit of the keys that match the digits found so far, and one thread picks the bin the
// k-th largest falls in. After four passes the k-th largest key T is known exactly, with how many
// of the keys equal to T belong in the answer (the `remaining` lowest-indexed ones; the keys above
// T all do). Two stream compactions then write the answer in index order: the indices of the keys
// equal to T (to find the last tie taken), and the indices of the answer itself. Every decision
// stays on the device, so nothing waits for the host; six reads of the values in all.
#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_select.cuh>

#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "kernels/cuda_grid.hpp"
#include "kernels/cuda_loops.cuh"
#include "kernels/topk.hpp"

namespace sb {
namespace {

constexpr int kDigitBits = 8, kBins = 1 << kDigitBits, kPasses = 4;  // 4 x 8 bits cover the 31

struct SelectState {
  uint32_t prefix;     // the digits of T found so far
  uint32_t mask;       // which bits of the key those are
  uint32_t remaining;  // how many of the keys matching prefix under mask are still to be taken
};

// |x| as an integer that orders like |x|, NaN above inf: topk_cpu's key.
__device__ __forceinline__ uint32_t magnitude_key(float x) { return __float_as_uint(x) & 0x7fffffffu; }

__global__ void start_kernel(SelectState* state, uint32_t k) { *state = {0u, 0u, k}; }

__global__ void digit_histogram_kernel(const float* values, size_t count, const SelectState* state, int shift,
                                       unsigned* histogram) {
  __shared__ unsigned local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const uint32_t prefix = state->prefix, mask = state->mask;
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const uint32_t key = magnitude_key(values[i]);
    if ((key & mask) == prefix) atomicAdd(&local[(key >> shift) & (kBins - 1)], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (local[b]) atomicAdd(&histogram[b], local[b]);
}

// One thread: scanning the bins from the top, the one where the count reaches `remaining`.
// The matching keys number at least `remaining`, so the scan stops at a bin.
__global__ void choose_digit_kernel(const unsigned* histogram, int shift, SelectState* state) {
  uint32_t above = 0;
  int bin = kBins - 1;
  while (above + histogram[bin] < state->remaining) above += histogram[bin--];
  state->prefix |= static_cast<uint32_t>(bin) << shift;
  state->mask |= static_cast<uint32_t>(kBins - 1) << shift;
  state->remaining -= above;
}

__global__ void sequence_kernel(uint32_t* indices, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) indices[i] = static_cast<uint32_t>(i);
}

struct EqualsThreshold {
  const float* values;
  const SelectState* state;
  __device__ bool operator()(uint32_t i) const { return magnitude_key(values[i]) == state->prefix; }
};

// Above T, or equal to it and no later than the last tie taken.
struct InTopK {
  const float* values;
  const SelectState* state;
  const uint32_t* ties;
  __device__ bool operator()(uint32_t i) const {
    const uint32_t key = magnitude_key(values[i]), threshold = state->prefix;
    return key > threshold || (key == threshold && i <= ties[state->remaining - 1]);
  }
};

}  // namespace

void topk_cuda(const float* values, size_t count, size_t k, uint32_t* indices, cudaStream_t stream) {
  SB_CHECK(k <= count, "top-k: k is larger than the number of values");
  SB_CHECK(count <= UINT32_MAX, "top-k: more values than 32-bit indices can name");
  if (k == 0) return;
  if (k == count) {
    sequence_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(indices, count);
    SB_CUDA_CHECK(cudaGetLastError());
    return;
  }

  // Scratch from the stream-ordered pool: the state, a histogram per pass, the ties' indices,
  // the compactions' counts and their temporary storage.
  const thrust::counting_iterator<uint32_t> positions(0);
  const auto items = static_cast<int64_t>(count);
  size_t ties_temp = 0, answer_temp = 0;
  SB_CUDA_CHECK(cub::DeviceSelect::If(nullptr, ties_temp, positions, static_cast<uint32_t*>(nullptr),
                                      static_cast<int64_t*>(nullptr), items, EqualsThreshold{}, stream));
  SB_CUDA_CHECK(cub::DeviceSelect::If(nullptr, answer_temp, positions, static_cast<uint32_t*>(nullptr),
                                      static_cast<int64_t*>(nullptr), items, InTopK{}, stream));
  SelectState* state = nullptr;
  unsigned* histograms = nullptr;
  uint32_t* ties = nullptr;
  int64_t* selected = nullptr;
  void* temp = nullptr;
  const size_t temp_bytes = ties_temp > answer_temp ? ties_temp : answer_temp;
  SB_CUDA_CHECK(cudaMallocAsync(&state, sizeof(SelectState), stream));
  SB_CUDA_CHECK(cudaMallocAsync(&histograms, kPasses * kBins * sizeof(unsigned), stream));
  SB_CUDA_CHECK(cudaMallocAsync(&ties, count * sizeof(uint32_t), stream));
  SB_CUDA_CHECK(cudaMallocAsync(&selected, sizeof(int64_t), stream));
  SB_CUDA_CHECK(cudaMallocAsync(&temp, temp_bytes > 0 ? temp_bytes : 1, stream));  // never a 0-byte request
  SB_CUDA_CHECK(cudaMemsetAsync(histograms, 0, kPasses * kBins * sizeof(unsigned), stream));

  start_kernel<<<1, 1, 0, stream>>>(state, static_cast<uint32_t>(k));
  for (int pass = 0; pass < kPasses; ++pass) {
    const int shift = (kPasses - 1 - pass) * kDigitBits;
    unsigned* histogram = histograms + pass * kBins;
    digit_histogram_kernel<<<cuda_blocks_for(count), kCudaThreads, 0, stream>>>(values, count, state, shift, histogram);
    choose_digit_kernel<<<1, 1, 0, stream>>>(histogram, shift, state);
  }
  SB_CUDA_CHECK(cudaGetLastError());
  size_t bytes = temp_bytes;
  SB_CUDA_CHECK(cub::DeviceSelect::If(temp, bytes, positions, ties, selected, items, EqualsThreshold{values, state},
                                      stream));
  bytes = temp_bytes;
  SB_CUDA_CHECK(cub::DeviceSelect::If(temp, bytes, positions, indices, selected, items,
                                      InTopK{values, state, ties}, stream));

  for (void* p : {static_cast<void*>(state), static_cast<void*>(histograms), static_cast<void*>(ties),
                  static_cast<void*>(selected), temp})
    SB_CUDA_CHECK(cudaFreeAsync(p, stream));
}

}  // namespace sb
