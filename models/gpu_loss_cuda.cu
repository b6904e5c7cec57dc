// Softmax cross-entropy with label smoothing (the definition of models/loss_math.hpp), one block
// per row of logits, in double as the CPU backends compute it.
#include "common/cuda_check.hpp"
#include "kernels/device_sum.cuh"
#include "models/gpu_elements.cuh"

namespace sb::models::gpu {
namespace {

__device__ double block_max(double v) {
  __shared__ double warp_max[32];
  for (int offset = 16; offset > 0; offset /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_max[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_max[lane] : -INFINITY;
    for (int offset = 16; offset > 0; offset /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Thread 0's result handed to every thread of the block.
__device__ double broadcast(double v) {
  __shared__ double value;
  if (threadIdx.x == 0) value = v;
  __syncthreads();
  const double out = value;
  __syncthreads();
  return out;
}

__global__ void cross_entropy_kernel(Elements logits, const int32_t* labels, Elements grad, int64_t rows,
                                     int64_t classes, double smoothing, double* row_loss) {
  const int64_t row = blockIdx.x;
  const size_t base = static_cast<size_t>(row * classes);
  double top = -INFINITY;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) top = fmax(top, static_cast<double>(load(logits, base + k)));
  top = broadcast(block_max(top));
  double sum = 0;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) sum += exp(static_cast<double>(load(logits, base + k)) - top);
  const double log_sum = top + log(broadcast(block_sum(sum)));
  const int32_t label = labels[row];
  double loss = 0;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) {
    const double target = smoothing / static_cast<double>(classes) + (k == label ? 1.0 - smoothing : 0.0);
    const double log_p = static_cast<double>(load(logits, base + k)) - log_sum;
    loss -= target * log_p;
    store(grad, base + k, static_cast<float>((exp(log_p) - target) / static_cast<double>(rows)));
  }
  loss = block_sum(loss);
  if (threadIdx.x == 0) row_loss[row] = loss;
}

// The mean of the rows' losses, stored as the fp32 loss.
struct StoreMean {
  float* loss;
  int64_t rows;
  __device__ void operator()(double sum) const { *loss = static_cast<float>(sum / static_cast<double>(rows)); }
};

struct RowLoss {
  const double* row_loss;
  __device__ double operator()(size_t row) const { return row_loss[row]; }
};

}  // namespace

void softmax_cross_entropy(Elements logits, const int32_t* labels, Elements grad, float* loss, int64_t rows,
                           int64_t classes, double smoothing, Stream stream) {
  if (rows == 0) {
    SB_CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(float), stream));
    return;
  }
  const size_t count = static_cast<size_t>(rows);
  double* scratch = nullptr;  // the rows' losses, then the partial sums over them
  SB_CUDA_CHECK(cudaMallocAsync(&scratch, (count + cuda_blocks_for(count)) * sizeof(double), stream));
  cross_entropy_kernel<<<static_cast<unsigned>(rows), kCudaThreads, 0, stream>>>(logits, labels, grad, rows, classes,
                                                                                smoothing, scratch);
  device_sum(count, RowLoss{scratch}, StoreMean{loss, rows}, scratch + count, stream);
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

}  // namespace sb::models::gpu
