// Batch norm over channels-last tensors (rows x channels), with the ReLU that follows it fused:
// per-channel sums in double (deterministic: partial sums per row block, added in order), then one
// element-wise pass with each thread on one channel (its constants in registers). Forward training is two reads of x
// (statistics, then normalise) and one write; backward is two reads of x, dy and y and one write.
#include <algorithm>

#include "common/cuda_check.hpp"
#include "models/gpu_elements.cuh"

namespace sb::models::gpu {
namespace {

// A block covers 32 consecutive channels (one warp reads 32 adjacent values of a row: coalesced)
// and kRowsPerBlock rows at a time; the grid's y dimension strides over the rows.
constexpr int kRowsPerBlock = 8;

dim3 reduction_grid(size_t rows, size_t channels) {
  const unsigned column_blocks = static_cast<unsigned>((channels + 31) / 32);
  const size_t wanted = (rows + 16 * kRowsPerBlock - 1) / (16 * kRowsPerBlock);  // >= 16 rows a thread
  const size_t cap = std::max<size_t>(1, 4096 / column_blocks);
  return dim3(column_blocks, static_cast<unsigned>(std::max<size_t>(1, std::min(wanted, cap))));
}

// Sums two per-row terms per channel over the block's rows into this row block's partials:
// partials[blockIdx.y][c] and partials[blockIdx.y][channels + c] (no atomics: total_sums_kernel
// adds the row blocks in order, so the statistics come out the same on every run). Term returns
// them for (row, channel).
template <class Term>
__device__ void accumulate_two(size_t rows, size_t channels, double* partials, Term term) {
  __shared__ double partial[2][kRowsPerBlock][32];
  const size_t c = blockIdx.x * 32 + threadIdx.x;
  double first = 0, second = 0;
  if (c < channels)
    for (size_t r = blockIdx.y * kRowsPerBlock + threadIdx.y; r < rows; r += size_t{gridDim.y} * kRowsPerBlock) {
      const double2 t = term(r, c);
      first += t.x;
      second += t.y;
    }
  partial[0][threadIdx.y][threadIdx.x] = first;
  partial[1][threadIdx.y][threadIdx.x] = second;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int y = 1; y < kRowsPerBlock; ++y) {
      first += partial[0][y][threadIdx.x];
      second += partial[1][y][threadIdx.x];
    }
    double* mine = partials + blockIdx.y * 2 * channels;
    mine[c] = first;
    mine[channels + c] = second;
  }
}

// totals[k] = the sum over row blocks, in order, of partials[y][k], for k < 2 x channels.
__global__ void total_sums_kernel(const double* partials, unsigned row_blocks, size_t channels, double* totals) {
  for (size_t k = grid_first(); k < 2 * channels; k += grid_stride()) {
    double sum = 0;
    for (unsigned y = 0; y < row_blocks; ++y) sum += partials[y * 2 * channels + k];
    totals[k] = sum;
  }
}

__global__ void statistics_sums_kernel(Elements x, size_t rows, size_t channels, double* partials) {
  accumulate_two(rows, channels, partials, [&](size_t r, size_t c) {
    const double v = load(x, r * channels + c);
    return make_double2(v, v * v);
  });
}

__global__ void statistics_finish_kernel(const double* sums, size_t rows, size_t channels, Elements mean,
                                         Elements variance) {
  const size_t c = grid_first();
  if (c >= channels) return;
  const double m = sums[c] / static_cast<double>(rows);
  store(mean, c, static_cast<float>(m));
  store(variance, c, static_cast<float>(fmax(sums[channels + c] / static_cast<double>(rows) - m * m, 0.0)));
}

// One channel per thread (channel_lanes): its scale and shift in registers. The residual, when
// given, is added in fp32 before the ReLU and the sum rounded once to y's type.
__global__ void apply_kernel(Elements x, Elements gamma, Elements beta, Elements mean, Elements variance,
                             Elements residual, Elements y, size_t count, size_t channels, size_t threads,
                             float epsilon, bool relu) {
  const size_t first = grid_first();
  if (first >= threads) return;
  const size_t c = first % channels;
  const float scale = load(gamma, c) * (1.0f / sqrtf(load(variance, c) + epsilon));
  const float centre = load(mean, c), shift = load(beta, c);
  for (size_t i = first; i < count; i += threads) {
    float v = scale * (load(x, i) - centre) + shift;
    if (residual.data != nullptr) v += load(residual, i);
    store(y, i, relu ? fmaxf(v, 0.0f) : v);
  }
}

// dy where the fused ReLU let the forward value through.
__device__ __forceinline__ float masked_dy(const Elements& dy, const Elements& y, size_t i) {
  return y.data == nullptr || load(y, i) > 0.0f ? load(dy, i) : 0.0f;
}

__global__ void backward_sums_kernel(Elements x, Elements dy, Elements y, Elements mean, size_t rows, size_t channels,
                                     double* partials) {
  accumulate_two(rows, channels, partials, [&](size_t r, size_t c) {
    const size_t i = r * channels + c;
    const double g = masked_dy(dy, y, i);
    return make_double2(g, g * (static_cast<double>(load(x, i)) - load(mean, c)));
  });
}

// dx = gamma / std (dy - mean(dy) - (x - mean) mean(dy (x - mean)) / var), from
// sums = (sum dy, sum dy (x - mean)) per channel; one channel per thread (channel_lanes), its
// constants in registers.
__global__ void backward_apply_kernel(Elements x, Elements dy, Elements y, Elements gamma, Elements mean,
                                      Elements variance, const double* sums, Elements dx, size_t rows,
                                      size_t channels, size_t threads, float epsilon) {
  const size_t first = grid_first();
  if (first >= threads) return;
  const size_t c = first % channels, count = rows * channels;
  const double inv_rows = 1.0 / static_cast<double>(rows);
  const double inv_std = 1.0 / sqrt(static_cast<double>(load(variance, c)) + epsilon);
  const double centre = load(mean, c), scale = load(gamma, c) * inv_std;
  const double mean_dy = sums[c] * inv_rows;
  const double centred_weight = sums[channels + c] * inv_rows * inv_std * inv_std;
  for (size_t i = first; i < count; i += threads) {
    const double centred = static_cast<double>(load(x, i)) - centre;
    store(dx, i, static_cast<float>(scale * (masked_dy(dy, y, i) - mean_dy - centred * centred_weight)));
  }
}

__global__ void backward_parameters_kernel(const double* sums, Elements variance, size_t channels, float epsilon,
                                           Elements dgamma, Elements dbeta) {
  const size_t c = grid_first();
  if (c >= channels) return;
  store(dgamma, c, static_cast<float>(sums[channels + c] / sqrt(static_cast<double>(load(variance, c)) + epsilon)));
  store(dbeta, c, static_cast<float>(sums[c]));
}

__global__ void channel_sum_kernel(Elements x, size_t rows, size_t channels, double* partials) {
  accumulate_two(rows, channels, partials, [&](size_t r, size_t c) { return make_double2(load(x, r * channels + c), 0.0); });
}

__global__ void store_sums_kernel(const double* sums, size_t channels, Elements out) {
  const size_t c = grid_first();
  if (c < channels) store(out, c, static_cast<float>(sums[c]));
}

const dim3 kReductionBlock(32, kRowsPerBlock);

// The per-channel sums of a reduction over `grid`: scratch on the stream for the row blocks'
// partials and, after them, the 2 x channels totals. `reduce(partials)` launches the reduction
// kernel; the totals are returned (free `scratch` in stream order when done with them).
template <class Reduce>
double* channel_sums(dim3 grid, size_t channels, Stream stream, double*& scratch, Reduce&& reduce) {
  const size_t per_block = 2 * channels;
  SB_CUDA_CHECK(cudaMallocAsync(&scratch, (grid.y + 1) * per_block * sizeof(double), stream));
  reduce(scratch);
  SB_CUDA_CHECK(cudaGetLastError());
  double* totals = scratch + grid.y * per_block;
  total_sums_kernel<<<cuda_blocks_for(per_block), kCudaThreads, 0, stream>>>(scratch, grid.y, channels, totals);
  SB_CUDA_CHECK(cudaGetLastError());
  return totals;
}

}  // namespace

void batchnorm_statistics(Elements x, Elements mean, Elements variance, size_t rows, size_t channels, Stream stream) {
  if (channels == 0) return;
  const dim3 grid = reduction_grid(rows, channels);
  double* scratch = nullptr;
  const double* sums = channel_sums(grid, channels, stream, scratch, [&](double* partials) {
    statistics_sums_kernel<<<grid, kReductionBlock, 0, stream>>>(x, rows, channels, partials);
  });
  statistics_finish_kernel<<<cuda_blocks_for(channels), kCudaThreads, 0, stream>>>(sums, rows, channels, mean, variance);
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

void batchnorm_apply(Elements x, Elements gamma, Elements beta, Elements mean, Elements variance, Elements residual,
                     Elements y, size_t rows, size_t channels, float epsilon, bool relu, Stream stream) {
  if (rows * channels == 0) return;
  const ChannelLanes lanes = channel_lanes(rows, channels);
  apply_kernel<<<lanes.blocks, kCudaThreads, 0, stream>>>(x, gamma, beta, mean, variance, residual, y, rows * channels,
                                                          channels, lanes.threads, epsilon, relu);
  SB_CUDA_CHECK(cudaGetLastError());
}

void batchnorm_backward(Elements x, Elements dy, Elements y, Elements gamma, Elements mean, Elements variance,
                        Elements dx, Elements dgamma, Elements dbeta, size_t rows, size_t channels, float epsilon,
                        Stream stream) {
  if (channels == 0) return;
  const dim3 grid = reduction_grid(rows, channels);
  double* scratch = nullptr;
  const double* sums = channel_sums(grid, channels, stream, scratch, [&](double* partials) {
    backward_sums_kernel<<<grid, kReductionBlock, 0, stream>>>(x, dy, y, mean, rows, channels, partials);
  });
  if (rows * channels > 0) {
    const ChannelLanes lanes = channel_lanes(rows, channels);
    backward_apply_kernel<<<lanes.blocks, kCudaThreads, 0, stream>>>(x, dy, y, gamma, mean, variance, sums, dx, rows,
                                                                     channels, lanes.threads, epsilon);
    SB_CUDA_CHECK(cudaGetLastError());
  }
  backward_parameters_kernel<<<cuda_blocks_for(channels), kCudaThreads, 0, stream>>>(sums, variance, channels, epsilon,
                                                                                      dgamma, dbeta);
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

void channel_sum(Elements x, Elements sum, size_t rows, size_t channels, Stream stream) {
  if (channels == 0) return;
  const dim3 grid = reduction_grid(rows, channels);
  double* scratch = nullptr;
  const double* sums = channel_sums(grid, channels, stream, scratch, [&](double* partials) {
    channel_sum_kernel<<<grid, kReductionBlock, 0, stream>>>(x, rows, channels, partials);
  });
  store_sums_kernel<<<cuda_blocks_for(channels), kCudaThreads, 0, stream>>>(sums, channels, sum);
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

}  // namespace sb::models::gpu
