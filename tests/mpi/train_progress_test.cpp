// What sb-train keeps when a fault ends a run early: the TrainProgress that train() keeps current
// for another thread (the watchdog's fault handler, which saves it: results_savers_test.cpp).
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "models/trainer.hpp"
#include "tests/mpi/small_runs.hpp"

namespace sb::models {
namespace {

// Snapshots taken while the training thread adds steps are whole (every step with its times and
// batch), never go back, and the last one is the result train() returns.
TEST(TrainProgress, SnapshotsTakenDuringTheRunAreWholeAndEndAtTheResult) {
  TrainProgress progress;
  std::atomic<bool> done{false};
  std::vector<TrainResult> seen;
  std::thread reader([&] {
    while (!done.load()) {
      seen.push_back(progress.snapshot());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const TrainResult result = train(few_steps(6), nullptr, MPI_COMM_WORLD, {}, &progress);
  done = true;
  reader.join();

  ASSERT_GE(seen.size(), 2u);  // the run takes well over 4 ms
  int64_t last_steps = 0;
  for (const TrainResult& s : seen) {
    EXPECT_EQ(static_cast<int64_t>(s.step_seconds.size()), s.steps);
    EXPECT_EQ(s.step_times.size(), s.step_seconds.size());
    EXPECT_GE(s.steps, last_steps);
    last_steps = s.steps;
  }
  const TrainResult last = progress.snapshot();
  EXPECT_EQ(result.steps, 6);
  EXPECT_EQ(last.steps, result.steps);
  EXPECT_EQ(last.step_seconds, result.step_seconds);
  EXPECT_EQ(last.images_per_s, result.images_per_s);
  EXPECT_GT(last.images_per_s, 0);
  EXPECT_EQ(last.parameter_count, result.parameter_count);
  EXPECT_EQ(median_step_rate(last, std::vector<int64_t>(6, 60)), result.images_per_s);
}

// The median rate leaves out the first step and the profiled ones.
TEST(TrainProgress, MedianStepRateLeavesOutTheFirstAndTheProfiledSteps) {
  TrainResult r;
  r.step_seconds = {100.0, 0.1, 0.1, 1.0, 0.5, 1.0};
  EXPECT_EQ(median_step_rate(r, {10, 10, 10, 10, 10, 10}), 20.0);  // of 100, 100, 10, 20, 10
  r.profiled_steps = 2;
  EXPECT_EQ(median_step_rate(r, {10, 10, 10, 10, 10, 10}), 10.0);  // of 10, 20, 10
  r.step_seconds.resize(3);
  EXPECT_EQ(median_step_rate(r, {10, 10, 10}), 0.0);  // no step left to measure
}

}  // namespace
}  // namespace sb::models
