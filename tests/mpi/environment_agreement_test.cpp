// Settings that differ between ranks reach rank 0's metadata as one line each, over MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include "results/environment_agreement.hpp"

namespace sb {
namespace {

int rank_and_size(int& size) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return rank;
}

TEST(CompareEnvironments, TheSameSettingsEverywhereLeaveNoDifference) {
  int size = 1;
  rank_and_size(size);
  RunMetadata metadata;
  metadata.program = "sb-test";
  metadata.environment = {{"NCCL_ALGO", "Ring"}, {"OMPI_MCA_ess_base_vpid", "ignored"}};
  compare_environments(metadata);
  EXPECT_TRUE(metadata.environment_differences.empty());
}

// The last rank runs with another NCCL_ALGO, and a UCX_TLS whose newline (written as \n) and '='
// do not cut it short; each rank's launcher-set vpid differs too, which is not compared.
TEST(CompareEnvironments, TheLastRanksOwnValueIsNamedOnRankZero) {
  int size = 1;
  const int rank = rank_and_size(size);
  RunMetadata metadata;
  metadata.program = "sb-test";
  const bool last = rank == size - 1 && size > 1;
  metadata.environment = {{"NCCL_ALGO", last ? "Tree" : "Ring"},
                          {"UCX_TLS", last ? "rc\nsm=1" : "rc"},
                          {"OMPI_MCA_ess_base_vpid", std::to_string(rank)}};
  compare_environments(metadata);
  if (rank != 0 || size == 1) {
    EXPECT_TRUE(metadata.environment_differences.empty());  // rank 0 alone holds them
    return;
  }
  const std::string others = size == 2 ? "rank 0" : "ranks 0-" + std::to_string(size - 2);
  const std::string last_rank = "rank " + std::to_string(size - 1);
  EXPECT_EQ(metadata.environment_differences,
            (std::vector<std::string>{"NCCL_ALGO: Ring on " + others + "; Tree on " + last_rank,
                                      "UCX_TLS: rc on " + others + "; rc\\nsm=1 on " + last_rank}));
}

}  // namespace
}  // namespace sb
