// sb-train's --workers auto: two loader threads on the host, whose cores compute; on a GPU every
// core of the rank's but the training thread's, within bounds.
#include <gtest/gtest.h>

#include "bench/train/options.hpp"

namespace sb {
namespace {

TEST(TrainOptions, AutoWorkersFeedAGpuFromTheRanksCores) {
  EXPECT_EQ(auto_loader_workers("onednn", 64), 2);
  EXPECT_EQ(auto_loader_workers("reference", 1), 2);
  EXPECT_EQ(auto_loader_workers("cudnn", 16), 15);
  EXPECT_EQ(auto_loader_workers("cudnn", 1), 2) << "a rank bound to one core still gets two";
  EXPECT_EQ(auto_loader_workers("cudnn", 256), kMostAutoWorkers);
}

}  // namespace
}  // namespace sb
