#include "results/environment_agreement.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

TEST(RankRanges, ConsecutiveRanksBecomeARange) {
  EXPECT_EQ(rank_ranges({}), "");
  EXPECT_EQ(rank_ranges({3}), "3");
  EXPECT_EQ(rank_ranges({0, 1}), "0-1");
  EXPECT_EQ(rank_ranges({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(rank_ranges({0, 2, 4}), "0,2,4");
}

// What Open MPI's mpirun exported to rank 1 of a two-rank job (ranks differ in vpid and node
// rank), the user's own settings, and ones no rank compares.
TEST(ComparedSettings, TheLaunchersOwnAndTheGpuBindingAreLeftOut) {
  const Settings recorded = {{"OMPI_MCA_ess_base_vpid", "1"},
                             {"OMPI_MCA_orte_ess_node_rank", "1"},
                             {"OMPI_MCA_orte_local_daemon_uri", "16187392.0;tcp://192.0.2.2:42625"},
                             {"OMPI_MCA_pmix", "^s1,s2,cray,isolated"},
                             {"OMPI_MCA_initial_wdir", "/work/main"},
                             {"OMPI_MCA_shmem_RUNTIME_QUERY_hint", "mmap"},
                             {"CUDA_VISIBLE_DEVICES", "1"},
                             {"OMPI_MCA_btl", "self,vader"},
                             {"NCCL_ALGO", "Ring"},
                             {"UCX_TLS", "rc,sm"},
                             {"OMP_NUM_THREADS", "4"}};
  const Settings expected = {
      {"OMPI_MCA_btl", "self,vader"}, {"NCCL_ALGO", "Ring"}, {"UCX_TLS", "rc,sm"}, {"OMP_NUM_THREADS", "4"}};
  EXPECT_EQ(compared_settings(recorded), expected);
  EXPECT_FALSE(is_compared_setting("PATH"));
  EXPECT_FALSE(is_compared_setting("SLURM_PROCID"));
}

TEST(SettingDifferences, NoneWhenEveryRankHasTheSame) {
  const Settings same = {{"NCCL_ALGO", "Ring"}, {"OMP_NUM_THREADS", "4"}};
  EXPECT_TRUE(setting_differences({same, same, same}).empty());
  EXPECT_TRUE(setting_differences({same}).empty());
  EXPECT_TRUE(setting_differences({}).empty());
  EXPECT_TRUE(setting_differences({{}, {}}).empty());
}

TEST(SettingDifferences, EachDifferingVariableIsOneLineOfValuesByFirstRank) {
  const Settings ring = {{"NCCL_ALGO", "Ring"}, {"OMP_NUM_THREADS", "4"}};
  const Settings tree = {{"NCCL_ALGO", "Tree"}, {"OMP_NUM_THREADS", "4"}};
  const Settings unset = {{"OMP_NUM_THREADS", "4"}};
  const Settings one_thread = {{"NCCL_ALGO", "Ring"}, {"OMP_NUM_THREADS", "1"}};
  EXPECT_EQ(setting_differences({ring, ring, tree, ring, unset}),
            (std::vector<std::string>{"NCCL_ALGO: Ring on ranks 0-1,3; Tree on rank 2; unset on rank 4"}));
  // Set on rank 1 alone: rank 0's "unset" comes first. Two variables: two lines, by name.
  EXPECT_EQ(setting_differences({unset, one_thread}),
            (std::vector<std::string>{"NCCL_ALGO: unset on rank 0; Ring on rank 1",
                                      "OMP_NUM_THREADS: 4 on rank 0; 1 on rank 1"}));
  // An empty value is a value, not unset.
  EXPECT_EQ(setting_differences({{{"UCX_TLS", ""}}, {}}),
            (std::vector<std::string>{"UCX_TLS:  on rank 0; unset on rank 1"}));
}

// A checkpoint's writer against the process that resumed from it.
TEST(SettingChanges, EachChangedVariableIsOneLineThenAndNow) {
  const Settings then = {{"NCCL_ALGO", "Ring"}, {"OMP_NUM_THREADS", "4"}, {"UCX_TLS", "rc"}};
  EXPECT_TRUE(setting_changes(then, then).empty());
  EXPECT_TRUE(setting_changes({}, {}).empty());
  const Settings now = {{"NCCL_ALGO", "Tree"}, {"NCCL_IB_HCA", "mlx5_0\nmlx5_1"}, {"UCX_TLS", "rc"}};
  EXPECT_EQ(setting_changes(then, now),
            (std::vector<std::string>{"NCCL_ALGO: Ring then, Tree now", "NCCL_IB_HCA: unset then, mlx5_0\\nmlx5_1 now",
                                      "OMP_NUM_THREADS: 4 then, unset now"}));
}

}  // namespace
}  // namespace sb
