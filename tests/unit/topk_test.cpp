// Exact top-k against a stable sort: every k from 0 to n on small inputs with many ties, signs,
// zeros and NaN; heavy-tailed data at large n and 1% density; bad k refused.
#include "kernels/topk.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/threshold.hpp"
#include "tests/unit/gpu_skip.hpp"

#if SB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace sb {
namespace {

std::vector<uint32_t> topk(const std::vector<float>& values, size_t k) {
  std::vector<uint32_t> indices(k);
  EXPECT_EQ(topk_cpu(values.data(), values.size(), k, indices.data()), k);
  return indices;
}

TEST(TopK, KeepsTheLargestMagnitudesTiesToTheLowerIndex) {
  const std::vector<float> v = {1.0f, -3.0f, 2.0f, 3.0f, -0.5f, 0.0f, -2.0f};
  EXPECT_EQ(topk(v, 1), (std::vector<uint32_t>{1}));         // -3 and 3 tie: index 1 wins
  EXPECT_EQ(topk(v, 2), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(topk(v, 3), (std::vector<uint32_t>{1, 2, 3}));   // 2 and -2 tie: index 2 wins
  EXPECT_EQ(topk(v, 7), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(topk(v, 0).empty());
}

TEST(TopK, MatchesTheSortForEveryKOnTiesAndSpecials) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t n = 1 + rng() % 300;
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.25f;  // many ties
    if (trial % 5 == 0) v[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    if (trial % 7 == 0) v[rng() % n] = -std::numeric_limits<float>::infinity();
    for (size_t k = 0; k <= n; ++k) ASSERT_EQ(topk(v, k), topk_reference(v.data(), n, k)) << "n=" << n << " k=" << k;
  }
}

TEST(TopK, NanRanksAboveInfinity) {
  const std::vector<float> v = {std::numeric_limits<float>::infinity(), 1.0f, std::nanf("")};
  EXPECT_EQ(topk(v, 1), (std::vector<uint32_t>{2}));
}

TEST(TopK, HeavyTailedDataAtOnePercent) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t n = 1000003;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng) * std::exp(1.5f * normal(rng));
  for (size_t k : {size_t{1}, n / 100, n / 2, n - 1})
    ASSERT_EQ(topk(v, k), topk_reference(v.data(), n, k)) << "k=" << k;
}

TEST(TopK, RefusesKLargerThanN) {
  const std::vector<float> v = {1.0f, 2.0f};
  std::vector<uint32_t> indices(3);
  EXPECT_DEATH(topk_cpu(v.data(), v.size(), 3, indices.data()), "k is larger");
}

#if SB_HAVE_CUDA
// values on the device for the length of a test.
class DeviceValues {
 public:
  explicit DeviceValues(const std::vector<float>& v) : n_(v.size()) {
    EXPECT_EQ(cudaMalloc(&values_, std::max<size_t>(n_, 1) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&indices_, std::max<size_t>(n_, 1) * sizeof(uint32_t)), cudaSuccess);
    cudaMemcpy(values_, v.data(), n_ * sizeof(float), cudaMemcpyHostToDevice);
  }
  ~DeviceValues() {
    cudaFree(values_);
    cudaFree(indices_);
  }
  std::vector<uint32_t> topk(size_t k) {
    topk_cuda(values_, n_, k, indices_, nullptr);
    return indices(k);
  }
  std::vector<uint32_t> at_least(float threshold) { return indices(select_at_least_cuda(values_, n_, threshold, indices_, nullptr)); }
  const float* values() const { return values_; }

 private:
  std::vector<uint32_t> indices(size_t k) {
    std::vector<uint32_t> host(k);
    EXPECT_EQ(cudaMemcpy(host.data(), indices_, k * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  size_t n_;
  float* values_ = nullptr;
  uint32_t* indices_ = nullptr;
};
#endif

TEST(TopKCuda, MatchesTheCpuOnTiesSpecialsAndHeavyTails) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {  // many ties: every k
    const size_t n = 1 + rng() % 300;
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.25f;
    if (trial % 5 == 0) v[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    if (trial % 7 == 0) v[rng() % n] = -std::numeric_limits<float>::infinity();
    DeviceValues device(v);
    for (size_t k = 0; k <= n; ++k) ASSERT_EQ(device.topk(k), topk(v, k)) << "n=" << n << " k=" << k;
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t n = 1000003;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng) * std::exp(1.5f * normal(rng));
  std::fill(v.begin(), v.begin() + 1000, 0.0f);  // a block of equal keys
  DeviceValues device(v);
  for (size_t k : {size_t{1}, n / 100, n / 2, n - 1000, n - 1}) ASSERT_EQ(device.topk(k), topk(v, k)) << "k=" << k;
#endif
}

TEST(ThresholdCuda, SamplesAndSelectsAsTheCpu) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t n : {size_t{700}, size_t{200003}}) {  // every value read, and a 1% sample
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng) * std::exp(normal(rng));
    v[n / 2] = std::numeric_limits<float>::quiet_NaN();
    DeviceValues device(v);
    const ThresholdSampling sampling = dgc_sampling(n, 0.01, 42, 7);
    const float threshold = sampled_threshold(v.data(), n, sampling.ratio, sampling.samples, sampling.key);
    EXPECT_EQ(sampled_threshold_cuda(device.values(), n, sampling.ratio, sampling.samples, sampling.key, nullptr), threshold);
    std::vector<uint32_t> want;
    select_at_least(v.data(), n, threshold, want);
    EXPECT_EQ(device.at_least(threshold), want) << "n=" << n;
  }
#endif
}

}  // namespace
}  // namespace sb
