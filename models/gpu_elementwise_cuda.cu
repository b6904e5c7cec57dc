// The element-wise kernels of models/gpu_kernels.hpp: one grid-stride loop each, fp32 arithmetic
// whatever the operands' types.
#include <algorithm>

#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "kernels/device_sum.cuh"
#include "models/gpu_elements.cuh"
#include "models/optimizer_math.hpp"

namespace sb::models::gpu {

size_t element_size(ElementType type) { return type == ElementType::f32 ? 4 : 2; }

const char* element_name(ElementType type) {
  switch (type) {
    case ElementType::f16: return "fp16";
    case ElementType::bf16: return "bf16";
    default: return "fp32";
  }
}

namespace {

__global__ void fill_kernel(Elements y, size_t count, float value) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) store(y, i, value);
}

__global__ void axpby_kernel(float a, Elements x, float b, Elements y, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride())
    store(y, i, b == 0.0f ? a * load(x, i) : a * load(x, i) + b * load(y, i));
}

__global__ void scale_by_kernel(Elements x, size_t count, const float* factor) {
  const float f = *factor;
  for (size_t i = grid_first(); i < count; i += grid_stride()) store(x, i, f * load(x, i));
}

// One block: whether all the sums are finite (an inf or NaN anywhere in an array makes its sum of
// squares inf or NaN).
__global__ void all_finite_kernel(const double* sums, size_t n, float* flag) {
  int bad = 0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) bad |= !isfinite(sums[i]);
  bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) *flag = bad ? 0.0f : 1.0f;
}

__global__ void add_kernel(Elements a, Elements b, Elements y, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) store(y, i, load(a, i) + load(b, i));
}

__global__ void convert_kernel(Elements x, Elements y, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) store(y, i, load(x, i));
}

__global__ void relu_forward_kernel(Elements x, Elements y, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) store(y, i, fmaxf(load(x, i), 0.0f));
}

__global__ void relu_backward_kernel(Elements y, Elements dy, Elements dx, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) store(dx, i, load(y, i) > 0.0f ? load(dy, i) : 0.0f);
}

// The terms of sum_of_squares, for kernels/device_sum.cuh's deterministic sum (no atomics: a
// norm, and so LARS's step, come out the same on every run).
struct Square {
  Elements x;
  __device__ double operator()(size_t i) const {
    const double v = load(x, i);
    return v * v;
  }
};

struct StoreFloatSum {
  float* sum;
  __device__ void operator()(double total) const { *sum = static_cast<float>(total); }
};

__global__ void add_bias_kernel(Elements y, Elements bias, size_t count, size_t channels, size_t threads) {
  const size_t first = grid_first();
  if (first >= threads) return;
  const float b = load(bias, first % channels);  // one channel per thread (channel_lanes)
  for (size_t i = first; i < count; i += threads) store(y, i, load(y, i) + b);
}

__global__ void momentum_kernel(float* w, Elements w_copy, Elements g, float* v, size_t count, MomentumArgs args) {
  if (args.rates && args.rates[step_rate::apply] == 0.0f) return;  // an overflowed fp16 step, skipped
  float lr = args.rates ? args.rates[step_rate::lr] : args.lr;
  const float grad_scale = args.rates ? args.rates[step_rate::grad_scale] : args.grad_scale;
  const float momentum_scale = args.rates ? args.rates[step_rate::momentum_scale] : args.momentum_scale;
  if (args.trust_norms)
    lr = lars_rate(lr, args.trust_norms[0], args.trust_norms[1], grad_scale, args.trust_eta, args.weight_decay);
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    float weight = w[i], velocity = v[i];
    momentum_element(weight, load(g, i) * grad_scale, velocity, lr, args.momentum, momentum_scale, args.weight_decay,
                     args.nesterov);
    w[i] = weight;
    v[i] = velocity;
    if (w_copy.data != nullptr) store(w_copy, i, weight);
  }
}

// One thread per channels-last element: the writes (or reads) of a warp are contiguous.
__global__ void nchw_to_channels_last_kernel(const float* nchw, Elements y, int64_t c, int64_t plane, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const int64_t channel = i % c, pixel = (i / c) % plane, image = i / (c * plane);
    store(y, i, nchw[(image * c + channel) * plane + pixel]);
  }
}

__global__ void channels_last_to_nchw_kernel(Elements x, float* nchw, int64_t c, int64_t plane, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const int64_t channel = i % c, pixel = (i / c) % plane, image = i / (c * plane);
    nchw[(image * c + channel) * plane + pixel] = load(x, i);
  }
}

__global__ void convert_with_feedback_kernel(Elements x, float* residual, Elements y, size_t count) {
  for (size_t i = grid_first(); i < count; i += grid_stride()) {
    const float v = load(x, i) + residual[i];
    store(y, i, v);
    residual[i] = v - load(y, i);
  }
}

int blocks(size_t count) { return cuda_blocks_for(count); }

}  // namespace

void fill(Elements y, size_t count, float value, Stream stream) {
  if (count == 0) return;
  fill_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(y, count, value);
  SB_CUDA_CHECK(cudaGetLastError());
}

void axpby(float a, Elements x, float b, Elements y, size_t count, Stream stream) {
  if (count == 0) return;
  axpby_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(a, x, b, y, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void add(Elements a, Elements b, Elements y, size_t count, Stream stream) {
  if (count == 0) return;
  add_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(a, b, y, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void convert(Elements x, Elements y, size_t count, Stream stream) {
  if (count == 0) return;
  if (x.type == y.type) {
    if (x.data != y.data)
      SB_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data, count * element_size(x.type), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  convert_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, y, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void convert_with_feedback(Elements x, float* residual, Elements y, size_t count, Stream stream) {
  if (count == 0) return;
  convert_with_feedback_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, residual, y, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void relu_forward(Elements x, Elements y, size_t count, Stream stream) {
  if (count == 0) return;
  relu_forward_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, y, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void relu_backward(Elements y, Elements dy, Elements dx, size_t count, Stream stream) {
  if (count == 0) return;
  relu_backward_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(y, dy, dx, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void nchw_to_channels_last(const float* nchw, Elements y, int64_t n, int64_t c, int64_t plane, Stream stream) {
  const size_t count = static_cast<size_t>(n * c * plane);
  if (count == 0) return;
  nchw_to_channels_last_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(nchw, y, c, plane, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

void channels_last_to_nchw(Elements x, float* nchw, int64_t n, int64_t c, int64_t plane, Stream stream) {
  const size_t count = static_cast<size_t>(n * c * plane);
  if (count == 0) return;
  channels_last_to_nchw_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, nchw, c, plane, count);
  SB_CUDA_CHECK(cudaGetLastError());
}

double sum_of_squares(Elements x, size_t count, Stream stream) {
  if (count == 0) return 0;
  return device_sum_to_host(count, Square{x}, stream);
}

namespace {
// Queues the sum of squares of each array, store(i) receiving the i-th total on the device; the
// partial sums reuse one scratch array in stream order.
template <class StoreAt>
void queue_sums_of_squares(const std::vector<Elements>& x, const std::vector<size_t>& counts, StoreAt store,
                           Stream stream) {
  SB_CHECK(x.size() == counts.size(), "one count per array");
  int most_blocks = 1;
  for (size_t count : counts) most_blocks = std::max(most_blocks, cuda_blocks_for(count));
  double* partials = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&partials, most_blocks * sizeof(double), stream));
  for (size_t i = 0; i < x.size(); ++i) device_sum(counts[i], Square{x[i]}, store(i), partials, stream);
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaFreeAsync(partials, stream));
}
}  // namespace

std::vector<double> sums_of_squares(const std::vector<Elements>& x, const std::vector<size_t>& counts, Stream stream) {
  std::vector<double> sums(x.size());
  if (x.empty()) return sums;
  double* totals = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&totals, x.size() * sizeof(double), stream));
  queue_sums_of_squares(x, counts, [totals](size_t i) { return StoreDeviceSum{totals + i}; }, stream);
  SB_CUDA_CHECK(cudaMemcpyAsync(sums.data(), totals, sums.size() * sizeof(double), cudaMemcpyDeviceToHost, stream));
  SB_CUDA_CHECK(cudaFreeAsync(totals, stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return sums;
}

void sums_of_squares_into(const std::vector<Elements>& x, const std::vector<size_t>& counts, float* sums,
                          Stream stream) {
  if (x.empty()) return;
  queue_sums_of_squares(x, counts, [sums](size_t i) { return StoreFloatSum{sums + i}; }, stream);
}

void all_finite_into(const std::vector<Elements>& x, const std::vector<size_t>& counts, float* flag, Stream stream) {
  double* totals = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&totals, std::max<size_t>(x.size(), 1) * sizeof(double), stream));
  queue_sums_of_squares(x, counts, [totals](size_t i) { return StoreDeviceSum{totals + i}; }, stream);
  all_finite_kernel<<<1, kCudaThreads, 0, stream>>>(totals, x.size(), flag);
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaFreeAsync(totals, stream));
}

void scale_by(Elements x, size_t count, const float* factor, Stream stream) {
  if (count == 0) return;
  scale_by_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(x, count, factor);
  SB_CUDA_CHECK(cudaGetLastError());
}

void add_bias(Elements y, Elements bias, size_t rows, size_t channels, Stream stream) {
  if (rows * channels == 0) return;
  const ChannelLanes lanes = channel_lanes(rows, channels);
  add_bias_kernel<<<lanes.blocks, kCudaThreads, 0, stream>>>(y, bias, rows * channels, channels, lanes.threads);
  SB_CUDA_CHECK(cudaGetLastError());
}

void momentum_update(float* w, Elements w_copy, Elements g, float* v, size_t count, const MomentumArgs& args,
                     Stream stream) {
  if (count == 0) return;
  momentum_kernel<<<blocks(count), kCudaThreads, 0, stream>>>(w, w_copy, g, v, count, args);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb::models::gpu
