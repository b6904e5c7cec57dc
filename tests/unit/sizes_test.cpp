#include "common/sizes.hpp"

#include <gtest/gtest.h>

#include "common/usage_error.hpp"

namespace sb {
namespace {

TEST(ParseSize, PlainAndSuffixed) {
  EXPECT_EQ(parse_size("0", "x"), 0u);
  EXPECT_EQ(parse_size("8", "x"), 8u);
  EXPECT_EQ(parse_size("64K", "x"), 64u << 10);
  EXPECT_EQ(parse_size("64k", "x"), 64u << 10);
  EXPECT_EQ(parse_size("1M", "x"), 1u << 20);
  EXPECT_EQ(parse_size("1MB", "x"), 1u << 20);
  EXPECT_EQ(parse_size("2G", "x"), 2ull << 30);
  EXPECT_EQ(parse_size("1T", "x"), 1ull << 40);
}

TEST(ParseSize, RejectsBadText) {
  for (const char* bad : {"", "-8", "abc", "8X", "8KK", "1.5M", "M", "99999999999999999999",
                          "17179869184G"})
    EXPECT_THROW(parse_size(bad, "--minbytes"), UsageError) << bad;
}

TEST(ParseSize, MessageNamesTheFlag) {
  try {
    parse_size("-8", "--minbytes");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--minbytes"), std::string::npos);
  }
}

TEST(ParseSize, AFractionIsSaidToBeNotAWholeNumber) {
  try {
    parse_size("0.5", "--stepfactor");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'0.5' is not a whole number"), std::string::npos) << e.what();
  }
}

TEST(FormatSize, ExactSuffixesOnly) {
  EXPECT_EQ(format_size(8), "8");
  EXPECT_EQ(format_size(1024), "1K");
  EXPECT_EQ(format_size(3u << 20), "3M");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_size(1536), "1536");
  EXPECT_EQ(format_size(1ull << 30), "1G");
}

TEST(SizeSweep, FactorAndStep) {
  EXPECT_EQ(size_sweep(8, 64, 2, 0), (std::vector<uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(size_sweep(8, 100, 2, 0), (std::vector<uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(size_sweep(10, 40, 0, 10), (std::vector<uint64_t>{10, 20, 30, 40}));
  EXPECT_EQ(size_sweep(32, 32, 0, 1), (std::vector<uint64_t>{32}));
  EXPECT_EQ(size_sweep(8 << 20, 64 << 20, 2, 0).size(), 4u);
}

// Ten thousand sizes, each a measurement, are a sweep; a billion (-b 8 -e 8G -i 1: 8 GB of sizes
// before the first measurement) is a mistake, refused as bad input.
TEST(SizeSweep, TooManySizesAreRefused) {
  EXPECT_EQ(size_sweep(1, kMostSweepSizes, 0, 1).size(), kMostSweepSizes);
  EXPECT_THROW(size_sweep(1, kMostSweepSizes + 1, 0, 1), UsageError);
  EXPECT_THROW(size_sweep(8, 8ull << 30, 0, 1), UsageError);
  EXPECT_EQ(size_sweep(1, ~0ull, 2, 0).size(), 64u);  // a factor of 2 spans every size in 64
}

TEST(SizeSweep, NeverLoopsForever) {
  EXPECT_EQ(size_sweep(8, 64, 0, 0), (std::vector<uint64_t>{8}));
  EXPECT_EQ(size_sweep(1ull << 63, ~0ull, 2, 0).size(), 1u);
}

}  // namespace
}  // namespace sb
