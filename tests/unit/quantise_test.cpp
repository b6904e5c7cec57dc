// Stochastic rounding (kernels/quantise.hpp): the vectorised CPU loop draws exactly the uniforms
// the element function names for each position, each bucket under its own scale; the uniforms are
// even and unrelated; the levels are the rounding's definition; and the CUDA kernel gives the same
// levels bit for bit (CUDA builds with a GPU; skipped otherwise).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/quantise.hpp"
#include "kernels/random.hpp"
#include "tests/unit/gpu_skip.hpp"

namespace sb {
namespace {

std::vector<float> values_for(size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f) * static_cast<float>(1 + i % 5);
  return v;
}

// A scale per bucket, with a zero scale among them (all its levels 0).
std::vector<float> scales_for(size_t count, size_t bucket) {
  std::vector<float> scales(scale_count(bucket, count));
  for (size_t b = 0; b < scales.size(); ++b) scales[b] = b % 4 == 3 ? 0.0f : 2.0f + static_cast<float>(b % 5);
  return scales;
}

TEST(Quantise, CpuLoopMatchesTheElementFunctionAtEveryPosition) {
  const uint64_t key = random_key(7, 16, 3);
  const float s = 16;
  for (size_t bucket : {size_t{0}, size_t{1}, size_t{100}, size_t{512}})
    for (size_t count : {0u, 1u, 2u, 7u, 511u, 512u, 513u, 1500u}) {
      const std::vector<float> v = values_for(count), scales = scales_for(count, bucket);
      const size_t span = scale_span(bucket, count);
      std::vector<int8_t> level(count, 99);
      stochastic_levels_cpu(v.data(), count, span, scales.data(), s, key, level.data());
      for (size_t i = 0; i < count; ++i) {
        const float u = stochastic_uniform(quantise_key(key), static_cast<uint32_t>(i));
        const float scale = scales[i / span];
        const float unit_inverse = scale > 0 ? s / scale : 0.0f;
        ASSERT_EQ(level[i], stochastic_level(v[i], unit_inverse, s, u)) << bucket << " " << count << " " << i;
        // The definition: floor(|x| s / scale + u), clamped to s, with x's sign.
        const float want = std::min(std::floor(std::fabs(v[i]) * unit_inverse + u), s);
        ASSERT_EQ(level[i], static_cast<int8_t>(v[i] < 0 ? -want : want)) << bucket << " " << count << " " << i;
      }
    }
}

TEST(Quantise, UniformsAreEvenAndUnrelatedAcrossPositionsAndKeys) {
  // 2^18 draws under one key: in [0, 1), spread evenly over 64 bins (chi-square with 63 degrees
  // of freedom: mean 63, sd 11.2; the bound is 5 sd above), and uncorrelated with the next
  // position's draw and with the same position's under other keys: the next step's key, and the
  // key one bit away, whose draws are this key's at i ^ 1, the hash's closest inputs. Each
  // correlation's sd is 1 / sqrt(n) = 0.002; the bound is 5 sd.
  const size_t n = size_t{1} << 18;
  const uint32_t key = quantise_key(random_key(3, 16, 7)), next_step = quantise_key(random_key(3, 16, 8));
  std::vector<double> u(n), v(n), w(n);
  std::vector<size_t> bins(64, 0);
  for (size_t i = 0; i < n; ++i) {
    const float x = stochastic_uniform(key, static_cast<uint32_t>(i));
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    u[i] = x;
    v[i] = stochastic_uniform(next_step, static_cast<uint32_t>(i));
    w[i] = stochastic_uniform(key ^ 1u, static_cast<uint32_t>(i));
    ++bins[static_cast<size_t>(x * 64)];
  }
  double chi2 = 0;
  const double expected = static_cast<double>(n) / 64;
  for (size_t b : bins) chi2 += (b - expected) * (b - expected) / expected;
  EXPECT_LT(chi2, 63 + 5 * 11.2);
  auto correlation = [](const std::vector<double>& a, const std::vector<double>& b, size_t lag) {
    const size_t m = a.size() - lag;
    double sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < m; ++i) {
      sa += a[i], sb += b[i + lag], sab += a[i] * b[i + lag], saa += a[i] * a[i], sbb += b[i + lag] * b[i + lag];
    }
    const double cov = sab / m - sa / m * sb / m;
    return cov / std::sqrt((saa / m - sa / m * sa / m) * (sbb / m - sb / m * sb / m));
  };
  const double bound = 5 / std::sqrt(static_cast<double>(n));
  EXPECT_LT(std::fabs(correlation(u, u, 1)), bound);
  EXPECT_LT(std::fabs(correlation(u, v, 0)), bound);
  EXPECT_LT(std::fabs(correlation(u, w, 0)), bound);
  double same = 0;  // and the keys' draws differ, not just their correlations
  for (size_t i = 0; i < n; ++i) same += u[i] == v[i];
  EXPECT_LT(same, n / 1000.0);
}

TEST(QuantiseCuda, MatchesTheCpuBitForBit) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  const size_t count = 100003;
  const std::vector<float> v = values_for(count);
  const uint64_t key = random_key(1, 2, 3);
  for (size_t bucket : {size_t{0}, size_t{512}}) {
    const std::vector<float> scales = scales_for(count, bucket);
    const size_t span = scale_span(bucket, count);
    std::vector<int8_t> want(count), got(count);
    stochastic_levels_cpu(v.data(), count, span, scales.data(), 16.0f, key, want.data());
    float *dv = nullptr, *dscales = nullptr;
    int8_t* dl = nullptr;
    ASSERT_EQ(cudaMalloc(&dv, count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dscales, scales.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dl, count), cudaSuccess);
    cudaMemcpy(dv, v.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dscales, scales.data(), scales.size() * sizeof(float), cudaMemcpyHostToDevice);
    stochastic_levels_cuda(dv, count, span, dscales, 16.0f, key, dl, nullptr);
    cudaMemcpy(got.data(), dl, count, cudaMemcpyDeviceToHost);
    cudaFree(dv);
    cudaFree(dscales);
    cudaFree(dl);
    EXPECT_EQ(got, want) << "bucket " << bucket;
  }
#endif
}

}  // namespace
}  // namespace sb
