// Compute jitter between ranks (sim/jitter.hpp): the slowest rank's factor per step, and the step
// expected from it.
#include "sim/jitter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/usage_error.hpp"

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

// A straggler: one rank s times slower at every step. Alone, the step is s times the profile's
// (one rank has none: it is the baseline); with jitter the step waits for it nearly always at
// 2 ranks, while at 128 ranks the others' noise nearly covers a small one.
TEST(SlowestRankFactors, AStragglerSetsThePaceUnlessTheOthersNoiseOutrunsIt) {
  EXPECT_EQ(slowest_rank_factors(0, 8, 1000, 1, 0.01, 1.5).mean, 1.5);
  EXPECT_EQ(slowest_rank_factors(0, 8, 1000, 1, 0.01, 1.5).bins.size(), 1u);
  EXPECT_EQ(slowest_rank_factors(0, 1, 1000, 1, 0.01, 1.5).mean, 1.0) << "one rank: no straggler";
  const double cv = 0.02;
  EXPECT_NEAR(slowest_rank_factors(cv, 2, 4000, 7, cv / 4, 1.5).mean, 1.5, 0.002);
  const double noise = slowest_rank_factors(cv, 128, 4000, 7, cv / 4).mean;  // about 1.052
  const double small = slowest_rank_factors(cv, 128, 4000, 7, cv / 4, 1.02).mean;
  EXPECT_GT(small, noise);
  EXPECT_LT(small - noise, 0.01) << "a 2% straggler among 127 noisy ranks";
  EXPECT_NEAR(slowest_rank_factors(cv, 128, 4000, 7, cv / 4, 1.3).mean, 1.3, 0.002);
  EXPECT_THROW(require_straggler(0.9), UsageError);
  EXPECT_THROW(require_straggler(kMostStraggler * 1.01), UsageError);
  EXPECT_THROW(require_straggler(std::nan("")), UsageError);
  EXPECT_NO_THROW(require_straggler(1));
}

// --balance: shares in proportion to speed. Two ranks, one 1.5x slower: shares 0.6 and 0.4 of the
// batch, each 1.2 times a healthy rank's half; at 128 ranks hardly anything. Jitter scales with it.
TEST(BalancedFactor, EveryRankComputesTheSameTimeOnItsShare) {
  EXPECT_NEAR(balanced_factor(2, 1.5), 1.2, 1e-12);
  EXPECT_NEAR(balanced_factor(128, 1.5), 128 / (127 + 1 / 1.5), 1e-12);
  EXPECT_EQ(balanced_factor(1, 1.5), 1.0) << "one rank: no straggler";
  EXPECT_EQ(balanced_factor(8, 1.0), 1.0);
  const SlowestRankFactors jitter = slowest_rank_factors(0.02, 8, 1000, 3, 0.005);
  const SlowestRankFactors both = scaled_factors(jitter, 1.2);
  ASSERT_EQ(both.bins.size(), jitter.bins.size());
  EXPECT_NEAR(both.mean, 1.2 * jitter.mean, 1e-12);
  EXPECT_NEAR(both.median, 1.2 * jitter.median, 1e-12);
  EXPECT_NEAR(both.bins.back().factor, 1.2 * jitter.bins.back().factor, 1e-12);
  EXPECT_EQ(both.bins.back().weight, jitter.bins.back().weight);
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

// Two ranks, three steps (the first left out): shares 1.2/0.8 then 1.0/1.0, so rank 0's share
// is 1.1 and its deviations +-0.1: cv 0.2 on one degree of freedom, a share's standard error 0.1,
// and 1.1 is within noise.
TEST(RankSpread, SplitsEachRanksShareFromTheSpreadAroundIt) {
  const std::vector<double> times = {5.0, 1.2, 1.0,    // rank 0
                                     1.0, 0.8, 1.0};  // rank 1
  const RankSpread spread = rank_spread(times, 2, 3);
  EXPECT_NEAR(spread.rank_shares[0], 1.1, 1e-12);
  EXPECT_NEAR(spread.rank_shares[1], 0.9, 1e-12);
  EXPECT_EQ(spread.slowest_rank, 0);
  EXPECT_NEAR(spread.transient_cv, 0.2, 1e-12);
  EXPECT_NEAR(spread.standard_error, 0.1, 1e-12);
  EXPECT_FALSE(spread.persistent);
  EXPECT_FALSE(rank_spread({1.2, 0.8}, 2, 1).persistent) << "one step cannot tell";
  EXPECT_EQ(rank_spread({1, 1}, 1, 2).rank_shares, std::vector<double>{1.0});
}

// Four ranks over 200 steps of 2% noise, each step's time its own (a slower batch), rank 3 1.2x
// the others: its share 1.2 / 1.05, the noise around the shares 2% / 1.05, and a straggler.
// Without it, no rank is one.
TEST(RankSpread, TellsAStragglerFromNoise) {
  for (double straggler : {1.0, 1.2}) {
    std::mt19937_64 engine(11);
    std::normal_distribution<double> z(0.0, 1.0);
    const size_t steps = 200;
    std::vector<double> times(4 * steps);
    for (size_t step = 0; step < steps; ++step) {
      const double batch = 0.1 + 0.001 * static_cast<double>(step % 7);
      for (size_t r = 0; r < 4; ++r) times[r * steps + step] = batch * (r == 3 ? straggler : 1.0) * (1 + 0.02 * z(engine));
    }
    const RankSpread spread = rank_spread(times, 4, steps);
    const double mean = (3 + straggler) / 4;
    EXPECT_NEAR(spread.transient_cv, 0.02 / mean, 0.003) << straggler;
    if (straggler > 1) {
      EXPECT_TRUE(spread.persistent);
      EXPECT_EQ(spread.slowest_rank, 3);
      EXPECT_NEAR(spread.slowest_share, straggler / mean, 0.005);
    } else {
      EXPECT_FALSE(spread.persistent) << "slowest share " << spread.slowest_share << ", error " << spread.standard_error;
    }
  }
}

// Rank 1 slow for a spell (the last quarter of 80 steps at 1.15x, another job on its node): its
// share over the run is well beyond the noise's standard error, but it is no straggler. The same
// rank slow at every step is.
TEST(RankSpread, ASlowSpellIsNoStraggler) {
  const size_t steps = 81;
  for (bool spell : {true, false}) {
    std::vector<double> times(2 * steps);
    for (size_t step = 0; step < steps; ++step) {
      const double wobble = step % 2 ? 0.01 : -0.01;
      times[step] = 1 + wobble;
      times[steps + step] = (spell ? (step > 60 ? 1.15 : 1.0) : 1.08) - wobble;
    }
    const RankSpread spread = rank_spread(times, 2, steps);
    EXPECT_EQ(spread.slowest_rank, 1);
    EXPECT_GT(spread.slowest_share - 1, kStragglerErrors * spread.standard_error) << "significant either way";
    EXPECT_EQ(spread.persistent, !spell);
  }
}

}  // namespace
}  // namespace sb::sim
