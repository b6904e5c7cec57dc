// Stochastic rounding (kernels/quantise.hpp): the vectorised CPU loop draws exactly the uniforms
// the element function names for each position (ragged blocks included), the levels are the
// rounding's definition, and the CUDA kernel gives the same levels bit for bit (CUDA builds with a
// GPU; skipped otherwise).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/quantise.hpp"
#include "tests/unit/gpu_skip.hpp"

namespace sb {
namespace {

std::vector<float> values_for(size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f) * static_cast<float>(1 + i % 5);
  return v;
}

TEST(Quantise, CpuLoopMatchesTheElementFunctionAtEveryPosition) {
  const uint64_t key = random_key(7, 16, 3);
  for (size_t count : {1u, 2u, 7u, 511u, 512u, 513u, 1500u}) {
    const std::vector<float> v = values_for(count);
    std::vector<int8_t> level(count);
    const float s = 16, unit_inverse = s / 5.0f;
    stochastic_levels_cpu(v.data(), count, unit_inverse, s, key, level.data());
    for (size_t i = 0; i < count; ++i) {
      const float u = stochastic_uniform(key, i, count);
      ASSERT_EQ(level[i], stochastic_level(v[i], unit_inverse, s, u)) << count << " " << i;
      // The definition: floor(|x| s / scale + u), clamped to s, with x's sign.
      const float want = std::min(std::floor(std::fabs(v[i]) * unit_inverse + u), s);
      ASSERT_EQ(level[i], static_cast<int8_t>(v[i] < 0 ? -want : want)) << count << " " << i;
    }
  }
}

TEST(Quantise, EachDrawServesTwoPositionsAndNoDrawIsReused) {
  // Within a block of 512, positions j and j + 256 share a draw (top and middle bits); blocks
  // use disjoint counters, so no two positions get the same (draw, half).
  const uint64_t key = 99;
  const size_t count = 1024 + 9;
  std::vector<float> u(count);
  for (size_t i = 0; i < count; ++i) u[i] = stochastic_uniform(key, i, count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_GE(u[i], 0.0f);
    ASSERT_LT(u[i], 1.0f);
  }
  EXPECT_EQ(u[0], uniform_from_bits(random_bits(key, 0), true));
  EXPECT_EQ(u[256], uniform_from_bits(random_bits(key, 0), false));
  EXPECT_EQ(u[512], uniform_from_bits(random_bits(key, 256), true));
  EXPECT_EQ(u[1024 + 5], uniform_from_bits(random_bits(key, 512), false));  // last block: half = 5
  double mean = 0;
  for (float x : u) mean += x / count;
  EXPECT_NEAR(mean, 0.5, 0.05);
}

TEST(QuantiseCuda, MatchesTheCpuBitForBit) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  const size_t count = 100003;
  const std::vector<float> v = values_for(count);
  std::vector<int8_t> want(count), got(count);
  const uint64_t key = random_key(1, 2, 3);
  stochastic_levels_cpu(v.data(), count, 3.0f, 16.0f, key, want.data());
  float* dv = nullptr;
  int8_t* dl = nullptr;
  ASSERT_EQ(cudaMalloc(&dv, count * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dl, count), cudaSuccess);
  cudaMemcpy(dv, v.data(), count * sizeof(float), cudaMemcpyHostToDevice);
  stochastic_levels_cuda(dv, count, 3.0f, 16.0f, key, dl, nullptr);
  cudaMemcpy(got.data(), dl, count, cudaMemcpyDeviceToHost);
  cudaFree(dv);
  cudaFree(dl);
  EXPECT_EQ(got, want);
#endif
}

}  // namespace
}  // namespace sb
