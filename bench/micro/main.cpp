// sb-micro: the kernels one by one, under Google Benchmark. Every benchmark reports its memory
// traffic (bytes read + written) per second, and beside it the ratio to what memcpy achieves on
// the same number of bytes, measured in the same benchmark just before: the in-run ceiling
// (x_memcpy), or for top-k the speed-up over std::nth_element on the same data (x_nth_element).
// Sizes: 1 MiB of fp32 (in cache) and 64 MiB (past every cache). Google Benchmark's flags all
// work (--benchmark_format=json ...); every run also writes an HDF5 file (/micro).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "collectives/compress/compressor.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "kernels/convert.hpp"
#include "kernels/quantise.hpp"
#include "kernels/random.hpp"
#include "kernels/reduce.hpp"
#include "kernels/topk.hpp"

namespace sb {
namespace {

constexpr int64_t kInCache = int64_t{1} << 18;    // fp32 elements: 1 MiB
constexpr int64_t kPastCache = int64_t{1} << 24;  // 64 MiB


template <class F>
double median_seconds(F&& f, int repetitions = 5) {
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// Memory traffic per second of memcpy moving traffic_bytes / 2 bytes (it reads and writes each).
double memcpy_traffic_per_second(size_t traffic_bytes) {
  const size_t bytes = std::max<size_t>(traffic_bytes / 2, 64);
  std::vector<unsigned char> from(bytes, 1), to(bytes, 2);
  return 2.0 * static_cast<double>(bytes) / median_seconds([&] {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::DoNotOptimize(to.data());
  });
}

// Runs `body` as the benchmark's loop with `traffic` bytes per iteration, and adds the ratio
// of its traffic rate to memcpy's at the same traffic.
template <class Body>
void run_memory_bound(benchmark::State& state, size_t traffic, Body&& body) {
  const double ceiling = memcpy_traffic_per_second(traffic);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    body();
    benchmark::ClobberMemory();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(traffic));
  state.counters["x_memcpy"] = static_cast<double>(traffic) * static_cast<double>(state.iterations()) / seconds / ceiling;
}

void BM_memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> a(n, 1.0f), b(n);
  run_memory_bound(state, 2 * n * sizeof(float), [&] { std::memcpy(b.data(), a.data(), n * sizeof(float)); });
}

// STREAM's triad, a = b + s * c: three streams.
void BM_triad(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  run_memory_bound(state, 3 * n * sizeof(float), [&] {
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
  });
}

void BM_reduce_sum_fp32(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> acc = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f), in = heavy_tailed_gradient(n, 2, 1.5f, 1e-3f);
  run_memory_bound(state, 3 * n * sizeof(float),
                   [&] { reduce_into_cpu(acc.data(), in.data(), n, DataType::float32, RedOp::sum); });
}

// The same on 16-bit data (MPI's user-defined op for fp16/bf16 and the schedules on them): widen
// both, add in fp32, round once.
template <class Half, DataType Type, Half (*One)(float)>
void BM_reduce_sum_16bit(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> a = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f), b = heavy_tailed_gradient(n, 2, 1.5f, 1e-3f);
  std::vector<Half> acc(n), in(n);
  for (size_t i = 0; i < n; ++i) {
    acc[i] = One(a[i]);
    in[i] = One(b[i]);
  }
  run_memory_bound(state, 3 * n * sizeof(Half), [&] { reduce_into_cpu(acc.data(), in.data(), n, Type, RedOp::sum); });
}

template <class Half, void (*Down)(const float*, Half*, size_t)>
void BM_to_16bit(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> in = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f);
  std::vector<Half> out(n);
  run_memory_bound(state, n * (sizeof(float) + sizeof(Half)), [&] { Down(in.data(), out.data(), n); });
}

template <class Half, Half (*One)(float)>
void BM_from_16bit(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> values = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f);
  std::vector<Half> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = One(values[i]);
  std::vector<float> out(n);
  run_memory_bound(state, n * (sizeof(float) + sizeof(Half)), [&] { to_float_cpu(in.data(), out.data(), n); });
}

// QSGD's stochastic rounding to 16 levels: reads fp32, writes a byte per value.
void BM_stochastic_levels(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> values = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f);
  std::vector<int8_t> level(n);
  const float scale = 1.0f;  // one scale for the whole tensor, as the scale's own pass is not timed
  uint64_t step = 0;
  run_memory_bound(state, n * (sizeof(float) + 1), [&] {
    stochastic_levels_cpu(values.data(), n, n, &scale, 16.0f, random_key(1, 16, step++), level.data());
  });
}

float16 one_half(float f) { return to_float16(f); }
bfloat16 one_bf16(float f) { return to_bfloat16(f); }

// Exact top-k at density range(1) per mille, against std::nth_element on the magnitudes (timed on
// a fresh copy each time, as it reorders its input).
void BM_topk(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const size_t k = std::max<size_t>(1, n * static_cast<size_t>(state.range(1)) / 1000);
  const std::vector<float> values = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f);
  std::vector<float> magnitudes(n), scratch(n);
  for (size_t i = 0; i < n; ++i) magnitudes[i] = std::fabs(values[i]);
  std::vector<double> nth;
  for (int i = 0; i < 3; ++i) {
    std::copy(magnitudes.begin(), magnitudes.end(), scratch.begin());
    const auto start = std::chrono::steady_clock::now();
    std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k - 1), scratch.end(), std::greater<>());
    nth.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(nth.begin(), nth.end());
  std::vector<uint32_t> indices(k);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    topk_cpu(values.data(), n, k, indices.data());
    benchmark::DoNotOptimize(indices.data());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n * sizeof(float)));
  state.counters["x_nth_element"] = nth[1] / (seconds / static_cast<double>(state.iterations()));
}

// Error feedback through a compressor with a blockwise form (residual += gradient, encode,
// residual -= decoded): fp16 and bf16 in one pass, efsign in two, onebit chunk by chunk, QSGD
// bucket by bucket, TernGrad's one scale in two passes and its rounding by blocks, with the
// traffic of one pass (read residual and gradient, write residual and payload), beside the three
// calls it replaces on the same data (x_three_calls).
void BM_feedback(benchmark::State& state, const char* compressor) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> gradient = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f);
  std::vector<float> residual(n, 0.0f);
  const auto c = make_compressor(compressor, {});
  std::vector<unsigned char> payload(c->payload_bytes(n));
  auto fused = [&] { c->compress_with_feedback(residual.data(), gradient.data(), n, 0, payload.data()); };
  auto three_calls = [&] { c->Compressor::compress_with_feedback(residual.data(), gradient.data(), n, 0, payload.data()); };
  const double ratio = median_seconds(three_calls) / median_seconds(fused);
  run_memory_bound(state, n * 3 * sizeof(float) + payload.size(), fused);
  state.counters["x_three_calls"] = ratio;
}

// DGC's selection (the threshold compressor: sampled threshold, candidates, exact top-k among
// them) at density range(1) per mille, against the exact top-k compressor on the same data.
void BM_threshold_select(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  CompressorParams params;
  params.ratio = static_cast<double>(state.range(1)) / 1000;
  const std::vector<float> values = heavy_tailed_gradient(n, 1, 1.5f, 1e-3f);
  const auto threshold = make_compressor("threshold", params), topk = make_compressor("topk", params);
  std::vector<unsigned char> payload(threshold->payload_bytes(n));
  std::vector<double> exact;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    topk->compress(values.data(), n, 0, payload.data());
    exact.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(exact.begin(), exact.end());
  uint64_t step = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    threshold->compress(values.data(), n, step++, payload.data());
    benchmark::DoNotOptimize(payload.data());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n * sizeof(float)));
  state.counters["x_topk"] = exact[1] / (seconds / static_cast<double>(state.iterations()));
}

BENCHMARK(BM_memcpy)->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_triad)->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_reduce_sum_fp32)->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_reduce_sum_16bit<float16, DataType::float16, one_half>)->Name("BM_reduce_sum_fp16")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_reduce_sum_16bit<bfloat16, DataType::bfloat16, one_bf16>)->Name("BM_reduce_sum_bf16")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_to_16bit<float16, to_float16_cpu>)->Name("BM_fp32_to_fp16")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_from_16bit<float16, one_half>)->Name("BM_fp16_to_fp32")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_to_16bit<bfloat16, to_bfloat16_cpu>)->Name("BM_fp32_to_bf16")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_from_16bit<bfloat16, one_bf16>)->Name("BM_bf16_to_fp32")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_stochastic_levels)->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK_CAPTURE(BM_feedback, fp16, "fp16")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK_CAPTURE(BM_feedback, bf16, "bf16")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK_CAPTURE(BM_feedback, efsign, "efsign")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK_CAPTURE(BM_feedback, onebit, "onebit")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK_CAPTURE(BM_feedback, qsgd, "qsgd")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK_CAPTURE(BM_feedback, terngrad, "terngrad")->Arg(kInCache)->Arg(kPastCache)->UseRealTime();
BENCHMARK(BM_topk)->Args({kPastCache, 10})->Args({kPastCache, 1})->Args({kInCache, 10})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_threshold_select)->Args({kPastCache, 10})->Args({kPastCache, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sb
