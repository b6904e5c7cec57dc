// The loss check is collective: when one rank's loss diverges, every rank throws at that step,
// so that none goes on into the next step's exchange to wait for the ones that stopped.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/usage_error.hpp"
#include "models/loss_divergence.hpp"

namespace sb::models {
namespace {

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// The message every rank throws, or "" when none threw.
std::string thrown(const std::vector<double>& losses, int64_t step) {
  try {
    require_finite_loss(losses, step, MPI_COMM_WORLD);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(LossDivergence, FiniteLossesOnEveryRankPass) {
  EXPECT_EQ(thrown({2.3, 2.1 + world_rank()}, 1), "");
}

TEST(LossDivergence, ANaNOnTheLastRankAloneEndsEveryRankAtThatStep) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool last = world_rank() == world_size() - 1;
  const std::string what = thrown({2.3, last ? nan : 2.2}, 7);
  const std::string ranks = world_size() > 1 ? " on 1 of " + std::to_string(world_size()) + " ranks" : "";
  EXPECT_NE(what.find("the training loss diverged ("), std::string::npos) << what;
  EXPECT_NE(what.find("nan" + ranks + ") at step 7; lower --lr"), std::string::npos) << what;
}

TEST(LossDivergence, AnInfinityCountsAsDivergedAndEachRankThatDivergedIsCounted) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::string what = thrown({world_rank() == 0 ? inf : 1.0}, 3);
  EXPECT_NE(what.find("diverged (inf"), std::string::npos) << what;
  const std::string everyone = thrown({inf}, 4);
  if (world_size() > 1) {
    const std::string all = std::to_string(world_size());
    EXPECT_NE(everyone.find("on " + all + " of " + all + " ranks"), std::string::npos) << everyone;
  }
  EXPECT_NE(everyone.find("at step 4"), std::string::npos) << everyone;
}

}  // namespace
}  // namespace sb::models
