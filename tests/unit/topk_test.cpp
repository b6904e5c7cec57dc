// Exact top-k against a stable sort: every k from 0 to n on small inputs with many ties, signs,
// zeros and NaN; heavy-tailed data at large n and 1% density; bad k refused.
#include "kernels/topk.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

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

}  // namespace
}  // namespace sb
