#include "common/stats.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

TEST(Stats, MeanAndNearestRankPercentiles) {
  EXPECT_DOUBLE_EQ(mean({}), 0);
  EXPECT_DOUBLE_EQ(mean({1, 2, 6}), 3);
  EXPECT_DOUBLE_EQ(percentile({5, 1, 3}, 50), 3);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2);
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(hundred, 99), 99);
  EXPECT_DOUBLE_EQ(percentile(hundred, 100), 100);
  EXPECT_DOUBLE_EQ(percentile(hundred, 0), 1);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
}

}  // namespace
}  // namespace sb
