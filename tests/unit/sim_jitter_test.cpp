// Compute jitter between ranks (sim/jitter.hpp): the slowest rank's factor per step, and the step
// expected from it.
#include "sim/jitter.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace sb::sim {
namespace {

TEST(SlowestRankFactors, WithoutJitterEveryStepIsTheProfilesOwn) {
  for (int nranks : {1, 128}) {
    const SlowestRankFactors f = slowest_rank_factors(0, nranks, 1000, 1, 0.01);
    ASSERT_EQ(f.bins.size(), 1u);
    EXPECT_EQ(f.bins[0].factor, 1.0);
    EXPECT_EQ(f.bins[0].weight, 1.0);
    EXPECT_EQ(f.mean, 1.0);
    EXPECT_EQ(f.median, 1.0);
  }
}

// The expected largest of N standard normals (2.5946 at 128, 3.0439 at 512, by numerical
// integration): the mean factor is 1 + cv times it, within the draws' error (about 0.0003 here).
TEST(SlowestRankFactors, TheSlowestOfNRanksIsAsTheLargestOfNNormals) {
  const double cv = 0.02;
  EXPECT_NEAR(slowest_rank_factors(cv, 1, 4000, 7, cv / 4).mean, 1.0, 0.001) << "one rank waits for nobody";
  EXPECT_NEAR(slowest_rank_factors(cv, 2, 4000, 7, cv / 4).mean, 1 + cv * 0.5642, 0.001);
  EXPECT_NEAR(slowest_rank_factors(cv, 128, 4000, 7, cv / 4).mean, 1 + cv * 2.5946, 0.001);
  EXPECT_NEAR(slowest_rank_factors(cv, 512, 4000, 7, cv / 4).mean, 1 + cv * 3.0439, 0.001);
}

TEST(SlowestRankFactors, BinsAscendHoldEveryStepAndAreTheSameForTheSameSeed) {
  const double cv = 0.05, width = cv / 4;
  const SlowestRankFactors f = slowest_rank_factors(cv, 64, 1000, 3, width);
  ASSERT_GT(f.bins.size(), 3u);
  double weights = 0, mean = 0;
  for (size_t b = 0; b < f.bins.size(); ++b) {
    weights += f.bins[b].weight;
    mean += f.bins[b].weight * f.bins[b].factor;
    if (b > 0) {
      EXPECT_GT(f.bins[b].factor, f.bins[b - 1].factor) << "bin " << b;
    }
  }
  EXPECT_NEAR(weights, 1.0, 1e-12);
  EXPECT_NEAR(mean, f.mean, 1e-12) << "each bin at its own steps' mean";
  EXPECT_GE(f.median, f.bins.front().factor);
  EXPECT_LE(f.median, f.bins.back().factor);
  const SlowestRankFactors again = slowest_rank_factors(cv, 64, 1000, 3, width);
  EXPECT_EQ(again.mean, f.mean);
  EXPECT_EQ(again.bins.size(), f.bins.size());
  EXPECT_NE(slowest_rank_factors(cv, 64, 1000, 4, width).mean, f.mean) << "another seed, other draws";
  // The largest jitter allowed draws no factor below the floor.
  EXPECT_GE(slowest_rank_factors(kMostJitter, 1, 100000, 5, kMostJitter / 4).bins.front().factor, kSmallestFactor);
}

TEST(SlowedProfile, EveryTimeIsMultiplied) {
  BackwardProfile profile;
  profile.forward_s = 0.004;
  profile.backward_s = 0.010;
  profile.tensors = {{"t0", 10}, {"t1", 20}};
  profile.ready_s = {0.009, 0.002};
  const BackwardProfile slowed = slowed_profile(profile, 1.5);
  EXPECT_DOUBLE_EQ(slowed.forward_s, 0.006);
  EXPECT_DOUBLE_EQ(slowed.backward_s, 0.015);
  EXPECT_EQ(slowed.ready_s, (std::vector<double>{0.009 * 1.5, 0.002 * 1.5}));
  EXPECT_EQ(slowed.tensors.size(), 2u);
}

// A step priced as its backward plus 1 ms of communication, with as many buckets as its factor
// has tenths: the expected step weighs each bin's, and keeps the median bin's buckets.
TEST(ExpectedStep, BinsAreWeightedAndTheMedianBinGivesTheBuckets) {
  BackwardProfile profile;
  profile.backward_s = 0.010;
  const auto predict = [&](const BackwardProfile& p) {
    StepPrediction s;
    s.iteration_s = p.backward_s + 0.001;
    s.exposed_s = 0.001;
    s.communication_s = 0.002;
    s.overlap = 0.5;
    s.negotiations = static_cast<size_t>(std::lround(p.backward_s / profile.backward_s * 10));
    s.bucket_start_s.assign(s.negotiations, 0.0);
    s.bucket_end_s.assign(s.negotiations, 0.0);
    return s;
  };
  SlowestRankFactors f;
  f.bins = {{1.0, 0.25}, {1.2, 0.5}, {1.4, 0.25}};
  f.mean = 1.2;
  f.median = 1.2;
  const StepPrediction e = expected_step(f, profile, predict);
  EXPECT_NEAR(e.iteration_s, 0.25 * 0.011 + 0.5 * 0.013 + 0.25 * 0.015, 1e-15);
  EXPECT_NEAR(e.exposed_s, 0.001, 1e-15);
  EXPECT_NEAR(e.overlap, 0.5, 1e-15);
  EXPECT_EQ(e.negotiations, 12u);
  EXPECT_EQ(e.bucket_start_s.size(), 12u);
  // One bin at 1.0, as without jitter: the prediction itself.
  const StepPrediction once = expected_step(slowest_rank_factors(0, 8, 1000, 1, 0.01), profile, predict);
  EXPECT_EQ(once.iteration_s, profile.backward_s + 0.001);
  EXPECT_EQ(once.negotiations, 10u);
}

// Two ranks, three steps by rank (rank * steps + step): the first step (warm-up) is left out, and
// a step every rank takes longer (the second) counts no more than the third.
TEST(BetweenRankCv, EachTimeCountsAsAShareOfItsStepsMean) {
  const std::vector<double> times = {5.0, 2.2, 1.1,    // rank 0
                                     1.0, 1.8, 0.9};  // rank 1
  // Step 1: 2.2 and 1.8 are 1.1 and 0.9 of their mean; step 2 the same. One degree of freedom each.
  EXPECT_NEAR(between_rank_cv(times, 2, 3), std::sqrt((0.01 + 0.01 + 0.01 + 0.01) / 2), 1e-12);
  EXPECT_EQ(between_rank_cv(times, 1, 6), 0) << "one rank";
  EXPECT_EQ(between_rank_cv({1, 1, 1, 1}, 2, 2), 0) << "no spread";
  EXPECT_EQ(between_rank_cv({0, 0, 0, 0}, 2, 2), 0) << "no step with time to share";
  EXPECT_EQ(between_rank_cv({1, 2}, 2, 3), 0) << "fewer times than ranks x steps";
  // A lone step is used, there being no other.
  EXPECT_NEAR(between_rank_cv({1.1, 0.9}, 2, 1), std::sqrt(0.02), 1e-12);
}

}  // namespace
}  // namespace sb::sim
