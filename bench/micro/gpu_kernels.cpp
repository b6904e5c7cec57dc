// sb-micro's GPU benchmarks (CUDA builds): the device kernels of kernels/ timed with CUDA events,
// each with its memory traffic per second and the ratio to a device-to-device cudaMemcpy of the
// same traffic measured just before (x_memcpy), the device's in-run ceiling. Without a GPU they
// report an error and are skipped; the CPU benchmarks still run.
#if SB_HAVE_CUDA
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/compress/device_compressor.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "kernels/convert.hpp"
#include "kernels/quantise.hpp"
#include "kernels/reduce.hpp"
#include "kernels/topk.hpp"

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
// ratio to the median of five cudaMemcpy runs moving the same traffic. Buffer a starts as
// `input` where one is given (data-dependent kernels), else zeros.
template <class Enqueue>
void run_device(benchmark::State& state, size_t traffic, Enqueue&& enqueue, const std::vector<float>& input = {}) {
  if (!have_gpu()) {
    state.SkipWithError("no GPU visible");
    return;
  }
  DeviceBench bench(std::max(traffic, input.size() * sizeof(float)));
  cudaMemcpy(bench.a, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice);
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
    // Buckets of 512 as QSGD's, their scales read from the values (zeros): the work is the same.
    stochastic_levels_cuda(static_cast<const float*>(a), n, 512, static_cast<const float*>(a), 16.0f, 12345,
                           static_cast<int8_t*>(b), nullptr);
  });
}

// Gradient-like data for the data-dependent kernels, as the CPU benchmarks use; made once per
// size (64 Mi values take a while), not per benchmark and repetition.
const std::vector<float>& gradient(size_t n) {
  static std::vector<float> values;
  if (values.size() != n) values = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f);
  return values;
}

// Exact top-k at density range(1) per mille (the radix select): traffic counted as one read of the
// values, so x_memcpy says how many copies' time the whole selection costs.
void BM_cuda_topk(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const size_t k = std::max<size_t>(1, n * static_cast<size_t>(state.range(1)) / 1000);
  run_device(state, n * sizeof(float), [&](void* a, void* b) {
    topk_cuda(static_cast<const float*>(a), n, k, static_cast<uint32_t*>(b), nullptr);
  }, gradient(n));
}

// One compressor's device compress (every round, each from its own payload, as compress_alone
// does on the host), at the default parameters: traffic counted as one read of the fp32 input.
void BM_cuda_compress(benchmark::State& state, const std::string& name) {
  if (!have_gpu()) {
    state.SkipWithError("no GPU visible");
    return;
  }
  const size_t n = static_cast<size_t>(state.range(0));
  const std::unique_ptr<DeviceCompressor> compressor = make_device_compressor(name, {});
  const Compressor& layout = compressor->layout();
  unsigned char* rounds = nullptr;  // each round's payload, one after another
  cudaMalloc(&rounds, layout.payload_bytes(n));
  uint64_t step = 0;
  run_device(state, n * sizeof(float), [&](void* a, void*) {
    const float* values = static_cast<const float*>(a);
    unsigned char* payload = rounds;
    compressor->compress(values, n, step, payload, nullptr);
    for (int round = 1; round < layout.rounds(); ++round) {
      unsigned char* next = payload + layout.round_payload_bytes(n, round - 1);
      compressor->next_round(values, n, round, payload, next, nullptr);
      payload = next;
    }
    ++step;
  }, gradient(n));
  cudaFree(rounds);
}

[[maybe_unused]] const bool compress_benchmarks_registered = [] {
  for (std::string_view name : compressor_names())
    benchmark::RegisterBenchmark(("BM_cuda_compress/" + std::string(name)).c_str(), BM_cuda_compress, std::string(name))
        ->Arg(kDeviceSize)
        ->UseManualTime();
  return true;
}();

BENCHMARK(BM_cuda_memcpy)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_reduce_sum_fp32)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_fp32_to_fp16)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_fp32_to_bf16)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_fp16_to_fp32)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_stochastic_levels)->Arg(kDeviceSize)->UseManualTime();
BENCHMARK(BM_cuda_topk)->Args({kDeviceSize, 10})->Args({kDeviceSize, 1})->UseManualTime();

}  // namespace
}  // namespace sb
#endif  // SB_HAVE_CUDA
