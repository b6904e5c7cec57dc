// sb-micro's GPU benchmarks (CUDA builds): the device kernels of kernels/ timed with CUDA events,
// each with its memory traffic per second and the ratio to a device-to-device cudaMemcpy of the
// same traffic measured just before (x_memcpy), the device's in-run ceiling. Without a GPU they
// report an error and are skipped; the CPU benchmarks still run.
#if SB_HAVE_CUDA
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/convert.hpp"
#include "kernels/quantise.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

constexpr int64_t kDeviceSize = int64_t{1} << 26;  // fp32 elements: 256 MiB, past any L2

bool have_gpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

// Device buffers and the events that time one iteration.
struct DeviceBench {
  explicit DeviceBench(size_t bytes) {
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~DeviceBench() {
    cudaFree(a);
    cudaFree(b);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  template <class Enqueue>
  double seconds(Enqueue&& enqueue) {
    cudaEventRecord(start);
    enqueue();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    return ms * 1e-3;
  }
  void* a = nullptr;
  void* b = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// The benchmark's loop with manual (event) times, traffic bytes per iteration, and x_memcpy: the
// ratio to the median of five cudaMemcpy runs moving the same traffic.
template <class Enqueue>
void run_device(benchmark::State& state, size_t traffic, Enqueue&& enqueue) {
  if (!have_gpu()) {
    state.SkipWithError("no GPU visible");
    return;
  }
  DeviceBench bench(traffic);
  std::vector<double> copies;
  for (int i = 0; i < 5; ++i)
    copies.push_back(bench.seconds([&] { cudaMemcpyAsync(bench.b, bench.a, traffic / 2, cudaMemcpyDeviceToDevice); }));
  std::sort(copies.begin(), copies.end());
  double total = 0;
  for (auto _ : state) {
    const double s = bench.seconds([&] { enqueue(bench.a, bench.b); });
    state.SetIterationTime(s);
    total += s;
  }
  if (cudaGetLastError() != cudaSuccess) state.SkipWithError("a CUDA call failed");
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(traffic));
  state.counters["x_memcpy"] = copies[2] * static_cast<double>(state.iterations()) / total;
}

void BM_cuda_memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  run_device(state, 2 * n * sizeof(float),
             [&](void* a, void* b) { cudaMemcpyAsync(b, a, n * sizeof(float), cudaMemcpyDeviceToDevice); });
}

void BM_cuda_reduce_sum_fp32(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  // Reads both halves of a, writes the first: a[0:n/2] += a[n/2:n] carries 3 x n/2 floats.
  run_device(state, 3 * n * sizeof(float), [&](void* a, void*) {
    float* f = static_cast<float*>(a);
    reduce_into_cuda(f, f + n / 2, n / 2, DataType::float32, RedOp::sum, nullptr);
  });
}

void BM_cuda_fp32_to_fp16(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  run_device(state, 6 * n, [&](void* a, void* b) {
    to_float16_cuda(static_cast<const float*>(a), static_cast<float16*>(b), n, nullptr);
  });
}

void BM_cuda_fp32_to_bf16(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  run_device(state, 6 * n, [&](void* a, void* b) {
    to_bfloat16_cuda(static_cast<const float*>(a), static_cast<bfloat16*>(b), n, nullptr);
  });
}

void BM_cuda_fp16_to_fp32(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  run_device(state, 6 * n, [&](void* a, void* b) {
    to_float_cuda(static_cast<const float16*>(b), static_cast<float*>(a), n, nullptr);
  });
}

// QSGD's stochastic rounding: 4 bytes read and 1 written per value.
void BM_cuda_stochastic_levels(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  run_device(state, 5 * n, [&](void* a, void* b) {
    stochastic_levels_cuda(static_cast<const float*>(a), n, 16.0f, 16.0f, 12345, static_cast<int8_t*>(b), nullptr);
  });
}

BENCHMARK(BM_cuda_memcpy)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_reduce_sum_fp32)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_fp32_to_fp16)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_fp32_to_bf16)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_fp16_to_fp32)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_stochastic_levels)->Arg(kDeviceSize)->UseManualTime();

}  // namespace
}  // namespace sb
#endif  // SB_HAVE_CUDA
