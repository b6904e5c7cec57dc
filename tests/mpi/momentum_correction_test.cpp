// The trainer's side of momentum correction (models/optimizer.hpp): which learning rate the
// momentum buffers were last updated at, which the next step's correction divides by. A step
// skipped for overflowed gradients (loss scaling, here at fp32 with the overflow injected) updates
// nothing, so it must leave that rate as the step before it set it; the checkpoint keeps it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/checkpoint.hpp"
#include "models/trainer.hpp"
#include "results/results_file.hpp"
#include "tests/mpi/small_runs.hpp"

namespace sb::models {
namespace {

struct Stopped {
  double momentum_lr = 0;
  std::vector<float> weights;
};

// `steps` steps of ResNet-20 on Fashion-MNIST with loss scaling, an overflow injected at each of
// `overflows` (1-based), and where the checkpoint written at the stop says the run stands (rank 0's
// view; the others return nothing). Collective.
Stopped run(int64_t steps, const std::vector<int64_t>& overflows) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string dir = shared_temp_dir("sb-momentum");
  if (dir.empty()) {
    ADD_FAILURE() << "no temporary folder";
    return {};
  }
  TrainConfig c = few_steps(steps);  // one epoch's cosine decay: every step's rate differs from the last
  c.loss_scale = 1024;
  c.inject_overflow_steps = overflows;
  c.checkpoint_dir = dir;
  EXPECT_TRUE(c.optimizer.corrects_momentum()) << "SGD's default";
  train(c, nullptr, MPI_COMM_WORLD);
  Stopped stopped;
  if (rank == 0) {
    const ResultsReader reader(checkpoint_path(dir));
    const h5::Node checkpoint = reader.root().open_group("checkpoint");
    stopped.momentum_lr = checkpoint.attr_double("momentum_lr");
    const h5::Node parameters = checkpoint.open_group("parameters");
    for (const std::string& name : parameters.children()) {
      const std::vector<float> t = parameters.read_floats(name);
      stopped.weights.insert(stopped.weights.end(), t.begin(), t.end());
    }
    std::filesystem::remove_all(dir);
  }
  return stopped;
}

TEST(MomentumCorrection, AStepSkippedForAnOverflowLeavesTheMomentumRate) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks > 2) GTEST_SKIP() << "every rank decides alike; 1 and 2 ranks show it";
  const Stopped seven = run(7, {}), eight_skipped = run(8, {8}), eight = run(8, {});
  if (rank != 0) return;
  EXPECT_GT(seven.momentum_lr, 0);
  EXPECT_EQ(eight_skipped.momentum_lr, seven.momentum_lr) << "the skipped step 8 set its rate";
  EXPECT_EQ(eight_skipped.weights, seven.weights) << "the skipped step 8 moved the weights";
  EXPECT_NE(eight.momentum_lr, seven.momentum_lr) << "an applied step 8 sets its own rate";
  EXPECT_LT(eight.momentum_lr, seven.momentum_lr) << "the cosine decays";
}

}  // namespace
}  // namespace sb::models
