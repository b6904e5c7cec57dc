// Every compressor's device form against its host twin on the same gradient, one rank (CUDA builds
// with a GPU; skipped otherwise): the payloads are the same bytes where no sum runs in another
// order on the device, and a payload decodes to the same values on either side.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "collectives/compress/compressor.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "tests/unit/gpu_skip.hpp"

#if SB_HAVE_CUDA
#include <cuda_runtime.h>

#include "collectives/compress/device_compressor.hpp"
#endif

namespace sb {
namespace {

#if SB_HAVE_CUDA
template <class T>
T* to_device(const std::vector<T>& host) {
  T* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, std::max<size_t>(host.size(), 1) * sizeof(T)), cudaSuccess);
  cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return device;
}
template <class T>
std::vector<T> to_host(const T* device, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

// Every round on this rank alone, as compress_alone() does on the host: the last round's payload.
std::vector<unsigned char> device_compress_alone(DeviceCompressor& c, const float* values, size_t count, uint64_t step) {
  const Compressor& layout = c.layout();
  unsigned char* payload = nullptr;
  cudaMalloc(&payload, layout.payload_bytes(count));
  c.compress(values, count, step, payload, nullptr);
  size_t bytes = layout.round_payload_bytes(count, 0);
  for (int round = 1; round < layout.rounds(); ++round) {
    unsigned char* next = nullptr;
    cudaMalloc(&next, layout.round_payload_bytes(count, round));
    c.next_round(values, count, round, payload, next, nullptr);
    cudaFree(payload);
    payload = next;
    bytes = layout.round_payload_bytes(count, round);
  }
  std::vector<unsigned char> host = to_host(payload, bytes);
  cudaFree(payload);
  return host;
}

// A host-side payload decoded on the device (decompress_add into zeros), back on the host.
std::vector<float> device_decode(DeviceCompressor& c, const std::vector<unsigned char>& payload, size_t count,
                                 uint64_t step) {
  unsigned char* on_device = to_device(payload);
  float* out = to_device(std::vector<float>(count, 0.0f));
  c.decompress_add(on_device, count, step, out, nullptr);
  std::vector<float> decoded = to_host(out, count);
  cudaFree(on_device);
  cudaFree(out);
  return decoded;
}
#endif

TEST(DeviceCompressors, MakeTheHostsPayloadsAndDecodeThem) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  // A device sum in another order can change a scale's last bit in these (and, rarely, a QSGD or
  // TernGrad level: the scale moves a value across a rounding boundary).
  const std::set<std::string> rounded = {"sign", "efsign", "onebit", "qsgd", "terngrad", "powersgd"};
  const size_t n = 70001;  // several onebit chunks and blocks, a ragged end, not a square
  const std::vector<float> g = heavy_tailed_gradient(n, 9);
  double norm = 0;
  for (float v : g) norm += static_cast<double>(v) * v;
  const double rms = std::sqrt(norm / n);
  double largest = 0;
  for (float v : g) largest = std::max(largest, static_cast<double>(std::fabs(v)));
  float* values = to_device(g);
  for (std::string_view name_view : compressor_names()) {
    const std::string name(name_view);
    SCOPED_TRACE(name);
    CompressorParams params;
    std::unique_ptr<Compressor> host = make_compressor(name, params);
    std::unique_ptr<DeviceCompressor> device = make_device_compressor(name, params);
    for (uint64_t step = 0; step < 2; ++step) {
      std::vector<unsigned char> want;
      compress_alone(*host, g.data(), n, step, want);
      const std::vector<unsigned char> got = device_compress_alone(*device, values, n, step);
      ASSERT_EQ(got.size(), want.size());
      if (!rounded.count(name)) {
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << "payload bytes";
      }

      // The device payload decoded on the device, against the host payload on the host.
      std::vector<float> decoded(n, 0.0f);
      host->decompress_add(want.data(), n, step, 1.0f, decoded.data());
      const std::vector<float> device_decoded = device_decode(*device, got, n, step);
      // Within float rounding; for the stochastic quantisers a few values (1 in 10,000) may be a
      // level apart, at most twice the largest level (QSGD's whole-tensor norm / levels, TernGrad's
      // max |x|).
      const bool stochastic = name == "qsgd" || name == "terngrad";
      const double close = rounded.count(name) ? 1e-4 * rms : 0.0;
      const double level = name == "qsgd" ? std::sqrt(norm) / params.levels : largest;
      size_t moved = 0;
      for (size_t i = 0; i < n; ++i) {
        const double apart = std::fabs(static_cast<double>(device_decoded[i]) - decoded[i]);
        ASSERT_LE(apart, stochastic ? 2 * level : close) << "value " << i;
        moved += apart > close;
      }
      EXPECT_LE(moved, n / 10000) << "values a level apart";
    }
  }
  cudaFree(values);
#endif
}

// PowerSGD over several tensors (a matrix, a vector, a matrix too small to compress, one of
// unknown shape): the device's factors and decoding are the host's, within fp32 rounding.
TEST(DeviceCompressors, PowerSgdPerTensorMatchesTheHost) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  const size_t n = 70001;
  CompressorParams params;
  params.tensors = {{300 * 70, 300}, {64, 1}, {6 * 5, 6}, {n - 300 * 70 - 64 - 30, 0}};
  const std::vector<float> g = heavy_tailed_gradient(n, 11);
  double norm = 0;
  for (float v : g) norm += static_cast<double>(v) * v;
  const double rms = std::sqrt(norm / n);
  float* values = to_device(g);
  std::unique_ptr<Compressor> host = make_compressor("powersgd", params);
  std::unique_ptr<DeviceCompressor> device = make_device_compressor("powersgd", params);
  for (uint64_t step = 0; step < 2; ++step) {
    std::vector<unsigned char> want;
    compress_alone(*host, g.data(), n, step, want);
    const std::vector<unsigned char> got = device_compress_alone(*device, values, n, step);
    ASSERT_EQ(got.size(), want.size());
    std::vector<float> decoded(n, 0.0f);
    host->decompress_add(want.data(), n, step, 1.0f, decoded.data());
    const std::vector<float> device_decoded = device_decode(*device, got, n, step);
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(device_decoded[i], decoded[i], 1e-4 * rms) << "value " << i << ", step " << step;
    // The vector and the small matrix travel as they are: the same bits.
    for (size_t i = 300 * 70; i < 300 * 70 + 64 + 30; ++i) EXPECT_EQ(device_decoded[i], g[i]) << "value " << i;
  }
  cudaFree(values);
#endif
}

// TernGrad, and QSGD without buckets, with a scale per tensor: the device's scales and levels are
// the host's (a level may move where a scale differs in its last bit, 1 value in 10,000). Two
// layouts: a few tensors (one empty, one of several chunks), and 120 of ResNet-like sizes from a
// few values to several chunks, which the device scales and rounds in one launch each.
TEST(DeviceCompressors, QuantisersWithAScalePerTensorMatchTheHost) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  std::vector<std::vector<TensorView>> layouts = {{{30000, 0}, {64, 1}, {0, 1}, {40001 - 64, 0}}, {}};
  for (size_t t = 0; t < 120; ++t) layouts[1].push_back({t % 3 == 0 ? 64 + t : t % 3 == 1 ? 2304 * (t % 7) : 37000 + t, 0});
  for (const std::vector<TensorView>& tensors : layouts) {
    size_t n = 0;
    for (const TensorView& t : tensors) n += t.count;
    SCOPED_TRACE(std::to_string(tensors.size()) + " tensors");
    const std::vector<float> g = heavy_tailed_gradient(n, 12);
    float* values = to_device(g);
    CompressorParams params;
    params.bucket = 0;
    params.tensors = tensors;
    for (const char* name : {"terngrad", "qsgd"}) {
      SCOPED_TRACE(name);
      std::unique_ptr<Compressor> host = make_compressor(name, params);
      std::unique_ptr<DeviceCompressor> device = make_device_compressor(name, params);
      std::vector<unsigned char> want;
      compress_alone(*host, g.data(), n, 3, want);
      const std::vector<unsigned char> got = device_compress_alone(*device, values, n, 3);
      const size_t head = tensors.size() * sizeof(float);
      ASSERT_EQ(got.size(), want.size());
      ASSERT_EQ(got.size(), head + n);
      for (size_t t = 0; t < tensors.size(); ++t) {
        float a, b;
        std::memcpy(&a, got.data() + t * sizeof(float), sizeof a);
        std::memcpy(&b, want.data() + t * sizeof(float), sizeof b);
        EXPECT_NEAR(a, b, 1e-6 * std::fabs(b)) << "scale " << t;
      }
      size_t moved = 0;
      for (size_t i = head; i < got.size(); ++i) moved += got[i] != want[i];
      EXPECT_LE(moved, n / 10000) << "levels apart";
      // Decoded on the device, against the host's decoding of the same payload.
      std::vector<float> decoded(n, 0.0f);
      host->decompress_add(got.data(), n, 3, 1.0f, decoded.data());
      const std::vector<float> device_decoded = device_decode(*device, got, n, 3);
      EXPECT_EQ(device_decoded, decoded);
    }
    cudaFree(values);
  }
#endif
}

TEST(DeviceCompressors, RefuseWhatTheHostRefuses) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  CompressorParams zero_rank;
  zero_rank.rank = 0;
  EXPECT_ANY_THROW(make_device_compressor("powersgd", zero_rank));
  EXPECT_ANY_THROW(make_device_compressor("zip", {}));
#endif
}

}  // namespace
}  // namespace sb
