// Horovod's loop live (CycleExchange, sb-train --bucket-strategy cycle) at 1..5 ranks: exact
// averages overlapped or not and weighted; buckets under the threshold; every rank fusing the same
// buckets in the same number of cycles; a bucket reduced no sooner than the cycle that found it,
// after its gradients were handed over; and a gradient held back on one rank reduced only after
// that rank reported it, while the others' buckets went ahead.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "collectives/buckets/cycle_exchange.hpp"
#include "tests/mpi/exchange_steps.hpp"

namespace sb {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Whether every rank holds the same value.
bool same_on_every_rank(long long value) {
  long long low = value, high = value;
  MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return low == high;
}

TEST(CycleExchange, EveryRankGetsTheAverageInBucketsUnderTheThreshold) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<GradientTensor> tensors;
  const size_t sizes[] = {432, 16, 16, 2304, 16, 16, 2304, 16, 16, 4608, 32, 32, 9216, 32, 32, 640, 10};
  for (size_t i = 0; i < std::size(sizes); ++i) tensors.push_back({std::string("t").append(std::to_string(i)), sizes[i]});
  const size_t threshold = 3000;  // values: t12 (9216) and t9 (4608) go alone
  for (bool overlap : {true, false}) {
    for (bool weighted : {false, true}) {
      ExchangeConfig config;
      config.overlap = overlap;
      Gradients grads(tensors);
      CycleExchange exchange(MPI_COMM_WORLD, config, tensors, 0.001, threshold * sizeof(float) / kMiB, grads.pointers);
      if (weighted) exchange.set_weight(static_cast<float>(rank + 1));
      const std::string what = std::string(overlap ? "overlapped" : "sequential") + (weighted ? ", weighted" : "");
      for (int step = 0; step < 3; ++step) {
        EXPECT_EQ(wrong_after_step(exchange, grads, step, [](size_t n) { return static_cast<int>(n % 97); }, weighted),
                  0u)
            << what << ", step " << step;
        const BucketPlan& plan = exchange.plan();
        size_t fused = 0;
        for (const Bucket& b : plan.buckets) {
          EXPECT_TRUE(b.count <= threshold || b.pieces.size() == 1) << what << ": a bucket of " << b.count << " values";
          fused += b.count;
        }
        EXPECT_EQ(fused, plan.total_count) << what << ": every value in one bucket";
        EXPECT_TRUE(same_on_every_rank(static_cast<long long>(plan.buckets.size()))) << what;
        EXPECT_TRUE(same_on_every_rank(static_cast<long long>(exchange.cycles()))) << what;
        if (!overlap) {
          EXPECT_EQ(exchange.cycles(), 1u) << "without overlap one cycle takes every gradient";
        }
      }
    }
  }
}

// Backward hands over t4, t3, t2 at 1, 2, 3 ms and t1, t0 at 9, 10 ms, as sb-buckets replays a
// profile; 4 ms cycles. Cycle k starts no sooner than k cycle times after begin_step(), later when
// the one before ran long, so every bucket waits for its cycle, and none holds a gradient handed
// over after the bucket started.
TEST(CycleExchange, ABucketWaitsForTheCycleThatFoundItsGradients) {
  const std::vector<GradientTensor> tensors = {{"t0", 50}, {"t1", 100}, {"t2", 30}, {"t3", 300}, {"t4", 200}};
  const double handed_at[] = {0.010, 0.009, 0.003, 0.002, 0.001};  // per tensor, after the step begins
  const double cycle_s = 0.004;
  ExchangeConfig config;
  Gradients grads(tensors);
  CycleExchange exchange(MPI_COMM_WORLD, config, tensors, cycle_s, 240.0 * sizeof(float) / kMiB, grads.pointers);
  for (int step = 0; step < 3; ++step) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double begin = MPI_Wtime();
    exchange.begin_step();
    std::vector<double> handed(tensors.size());
    for (size_t k = tensors.size(); k-- > 0;) {
      const double wait = begin + handed_at[k] - MPI_Wtime();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      handed[k] = MPI_Wtime();
      exchange.tensor_ready(k);
    }
    exchange.finish();
    const BucketPlan& plan = exchange.plan();
    const auto spans = exchange.bucket_spans();
    ASSERT_EQ(spans.size(), plan.buckets.size());
    for (size_t b = 0; b < plan.buckets.size(); ++b) {
      EXPECT_GE(spans[b].first - begin, static_cast<double>(plan.buckets[b].tick) * cycle_s - 1e-4)
          << "step " << step << ": bucket " << b << " reduced before its cycle";
      for (const BucketPiece& piece : plan.buckets[b].pieces)
        EXPECT_GE(spans[b].first, handed[piece.tensor]) << "step " << step << ": bucket " << b << " holds tensor "
                                                        << piece.tensor << ", handed over after it started";
      if (b > 0) {
        EXPECT_GE(plan.buckets[b].tick, plan.buckets[b - 1].tick) << "step " << step;
        EXPECT_GE(spans[b].first, spans[b - 1].second) << "step " << step << ": one bucket at a time";
      }
    }
    EXPECT_TRUE(same_on_every_rank(static_cast<long long>(plan.buckets.size())));
  }
}

TEST(CycleExchange, AGradientHeldBackOnOneRankWaitsForItWhileTheRestGoAhead) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const std::vector<GradientTensor> tensors = {{"t0", 100}, {"t1", 100}, {"t2", 100}};
  ExchangeConfig config;
  Gradients grads(tensors);
  CycleExchange exchange(MPI_COMM_WORLD, config, tensors, 0.002, 1.0, grads.pointers);
  const bool late = rank == nranks - 1;  // the rank whose backward is slow to give t0
  for (int step = 0; step < 2; ++step) {
    for (size_t k = 0; k < tensors.size(); ++k) std::fill(grads.values[k].begin(), grads.values[k].end(), rank + 1.0f);
    MPI_Barrier(MPI_COMM_WORLD);
    exchange.begin_step();
    exchange.tensor_ready(2);
    exchange.tensor_ready(1);
    if (late) std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const double t0_reported = MPI_Wtime();
    exchange.tensor_ready(0);
    const ExchangeTimes times = exchange.finish();
    for (size_t k = 0; k < tensors.size(); ++k)
      EXPECT_EQ(grads.values[k][0], (nranks + 1) / 2.0f) << "tensor " << k << ", step " << step;
    // t2 and t1, ready everywhere within a cycle or two, make the first bucket; t0 a later one.
    const BucketPlan& plan = exchange.plan();
    ASSERT_EQ(plan.buckets.size(), 2u) << "step " << step;
    ASSERT_EQ(plan.buckets[0].pieces.size(), 2u);
    EXPECT_EQ(plan.buckets[0].pieces[0].tensor, 2u) << "fused in the order backward gave them";
    EXPECT_EQ(plan.buckets[0].pieces[1].tensor, 1u);
    EXPECT_EQ(plan.buckets[1].pieces[0].tensor, 0u);
    EXPECT_GT(plan.buckets[1].tick, plan.buckets[0].tick);
    EXPECT_EQ(exchange.cycles(), plan.buckets[1].tick + 1) << "the step ends with the cycle that found its last gradient";
    EXPECT_TRUE(same_on_every_rank(static_cast<long long>(exchange.cycles())));
    EXPECT_EQ(times.negotiations, exchange.cycles()) << "a negotiation a cycle";
    EXPECT_LE(times.negotiation_s, times.communication_s) << "the negotiations are part of the communication";
    const auto spans = exchange.bucket_spans();
    ASSERT_EQ(spans.size(), 2u);
    if (late) {
      EXPECT_GE(spans[1].first, t0_reported) << "t0's bucket started before the late rank reported t0";
      EXPECT_LT(spans[0].second, t0_reported) << "the first bucket waited for t0 instead of going ahead";
    }
  }
}

}  // namespace
}  // namespace sb
