#include "kernels/float16.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sb {
namespace {

TEST(Float16, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float16 h{static_cast<uint16_t>(bits)};
    const float f = to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(to_float(to_float16(f)))) << bits;
      continue;
    }
    EXPECT_EQ(to_float16(f).bits, bits) << "half 0x" << std::hex << bits;
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(to_float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(to_float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(to_float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(to_float16(0.0f).bits, 0x0000);
  EXPECT_EQ(to_float16(-0.0f).bits, 0x8000);
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(to_float16(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_FLOAT_EQ(to_float(float16{0x3555}), 0.333251953125f);
}

TEST(Float16, RoundsToNearestEven) {
  // Halfway between 1 and the next half (1 + 2^-10) goes to the even one, 1.
  EXPECT_EQ(to_float16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  // Halfway between 1 + 2^-10 (odd) and 1 + 2^-9 goes up to the even one.
  EXPECT_EQ(to_float16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(to_float16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)).bits, 0x3c01);
  // 65519.99 rounds down to the largest finite; 65520 is the tie that goes to infinity.
  EXPECT_EQ(to_float16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(to_float16(65520.0f).bits, 0x7c00);
  // A subnormal tie: 1.5 * 2^-24 rounds to the even 2 * 2^-24.
  EXPECT_EQ(to_float16(1.5f * std::ldexp(1.0f, -24)).bits, 0x0002);
  EXPECT_EQ(to_float16(0.5f * std::ldexp(1.0f, -24)).bits, 0x0000);
  // Rounding up out of the subnormals gives the smallest normal.
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)).bits, 0x0400);
}

TEST(BFloat16, RoundTripAndRounding) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = to_float(bfloat16{static_cast<uint16_t>(bits)});
    if (std::isnan(f)) continue;
    EXPECT_EQ(to_bfloat16(f).bits, bits);
  }
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bfloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);       // tie to even
  EXPECT_EQ(to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);   // tie to even
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::nanf("")))));
  EXPECT_EQ(to_bfloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds to inf
}

}  // namespace
}  // namespace sb
