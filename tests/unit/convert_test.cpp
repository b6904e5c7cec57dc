// The array conversions against the element functions (bit for bit, on values that reach every
// case: normals, subnormals, ties, overflow, inf, NaN), and the element functions themselves
// against a plain reference written the slow, obvious way.
#include "kernels/convert.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace sb {
namespace {

// Interesting floats, then a million random bit patterns.
std::vector<float> every_case() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, 1e9f, -1e9f,
                          std::ldexp(1.0f, -24), std::ldexp(1.5f, -24), std::ldexp(1.0f, -14),
                          std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26), 1.0f + std::ldexp(1.0f, -11),
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(7);
  for (int i = 0; i < 1 << 20; ++i) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    v.push_back(f);
  }
  return v;
}

// fp32 -> fp16 by the book: scale into the half's grid with exact double arithmetic, round with
// nearbyint (ties to even), then assemble the bits.
uint16_t half_by_the_book(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if (std::isnan(f)) return sign | 0x7e00u;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00u;
  if (a < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::nearbyint(a * std::ldexp(1.0, 24)));
  int exponent;
  std::frexp(a, &exponent);  // a = m * 2^exponent, m in [0.5, 1)
  const double scaled = std::nearbyint(std::ldexp(a, 11 - exponent));  // 11 significant bits
  // Rounding may carry into the next binade: 2048 * 2^(exponent - 11) = 2^exponent.
  const int e = scaled >= 2048.0 ? exponent + 1 : exponent;
  const uint32_t mantissa = static_cast<uint32_t>(scaled >= 2048.0 ? scaled / 2 : scaled) & 0x3ffu;
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(e - 1 + 15) << 10 | mantissa);
}

TEST(Convert, ElementFunctionMatchesTheBook) {
  for (float f : every_case()) {
    const uint16_t want = half_by_the_book(f);
    const uint16_t got = to_float16(f).bits;
    if (std::isnan(f)) {
      EXPECT_EQ(got & 0x7e00u, 0x7e00u);  // a quiet NaN, whatever the payload
      continue;
    }
    ASSERT_EQ(got, want) << std::hexfloat << f;
  }
}

TEST(Convert, ArraysMatchTheElementFunctions) {
  const std::vector<float> values = every_case();
  const size_t n = values.size();
  std::vector<float16> half(n);
  std::vector<bfloat16> brain(n);
  std::vector<float> back(n);
  to_float16_cpu(values.data(), half.data(), n);
  to_bfloat16_cpu(values.data(), brain.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(half[i].bits, to_float16(values[i]).bits) << i;
    ASSERT_EQ(brain[i].bits, to_bfloat16(values[i]).bits) << i;
  }
  to_float_cpu(half.data(), back.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float want = to_float(half[i]);
    ASSERT_EQ(std::memcmp(&back[i], &want, sizeof want), 0) << i;
  }
  to_float_cpu(brain.data(), back.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float want = to_float(brain[i]);
    ASSERT_EQ(std::memcmp(&back[i], &want, sizeof want), 0) << i;
  }
}

TEST(Convert, EveryHalfDecodesAsTheElementFunctionDoes) {
  // All 65,536 patterns, signalling NaNs included (the F16C path quiets them; to_float does not).
  std::vector<float16> every(1 << 16);
  for (size_t i = 0; i < every.size(); ++i) every[i].bits = static_cast<uint16_t>(i);
  for (size_t offset : {size_t{0}, size_t{3}}) {  // also not starting on a vector boundary
    std::vector<float> back(every.size() - offset);
    to_float_cpu(every.data() + offset, back.data(), back.size());
    for (size_t i = 0; i < back.size(); ++i) {
      const float want = to_float(every[i + offset]);
      ASSERT_EQ(std::memcmp(&back[i], &want, sizeof want), 0) << std::hex << every[i + offset].bits;
    }
  }
}

TEST(Convert, Fp16RoundTripIsWithinHalfAnUlp) {
  // |x - fp32(fp16(x))| <= 2^-11 |x| for x in the normal fp16 range.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-14, 15);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::ldexp(mantissa(rng), exponent(rng)) * (i % 2 ? 1.0f : -1.0f);
    if (std::fabs(x) >= 65504.0f) continue;
    EXPECT_LE(std::fabs(x - to_float(to_float16(x))), std::ldexp(std::fabs(x), -11)) << x;
  }
}

}  // namespace
}  // namespace sb
