// The gradient exchange at 1..5 ranks: for every bucket strategy, overlapped or not, every rank
// ends with the average of all ranks' gradients (integer-valued, so exactly), whatever order
// backward reports the tensors in.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "collectives/buckets/gradient_exchange.hpp"
#include "common/usage_error.hpp"
#include "tests/mpi/exchange_steps.hpp"

namespace sb {
namespace {

TEST(GradientExchange, EveryRankGetsTheAverageOfEveryTensor) {
  // Many equal small tensors (like BN vectors) and a few large ones.
  std::vector<GradientTensor> tensors;
  const size_t sizes[] = {432, 16, 16, 2304, 16, 16, 2304, 16, 16, 4608, 32, 32, 9216, 32, 32, 640, 10};
  for (size_t i = 0; i < std::size(sizes); ++i) tensors.push_back({std::string("t").append(std::to_string(i)), sizes[i]});
  for (BucketStrategy strategy :
       {BucketStrategy::per_tensor, BucketStrategy::fixed, BucketStrategy::ddp, BucketStrategy::partition}) {
    for (bool overlap : {true, false}) {
      ExchangeConfig config;
      config.overlap = overlap;
      Gradients grads(tensors);
      GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, strategy, 0.01, 1000), grads.pointers);
      for (int step = 0; step < 3; ++step)
        EXPECT_EQ(wrong_after_step(exchange, grads, step, [](size_t n) { return static_cast<int>(n % 97); }), 0u)
            << bucket_strategy_name(strategy) << (overlap ? " overlapped" : " sequential") << " step " << step;
    }
  }
}

// Schedules on either host transport, sb-train's --algo X --transport mpi|shm: the shm transport
// reads peers' buckets out of shared windows, so the exchange's fused buffers must come from it
// (they were plain vectors once, and every step ended the job: "not in a shared window").
TEST(GradientExchange, SchedulesOnEachHostTransportAverageEveryTensor) {
  const std::vector<GradientTensor> tensors = {{"w1", 4608}, {"b1", 32}, {"w2", 9216}, {"b2", 32}, {"fc", 650}};
  for (const char* algorithm : {"ring", "rabenseifner", "dbtree"})
    for (Transport transport : {Transport::mpi, Transport::shm})
      for (bool overlap : {true, false}) {
        ExchangeConfig config;
        config.algorithm = algorithm;
        config.impl.transport = transport;
        config.overlap = overlap;
        Gradients grads(tensors);
        GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, BucketStrategy::fixed, 0.02),
                                  grads.pointers);
        for (int step = 0; step < 2; ++step)
          EXPECT_EQ(wrong_after_step(exchange, grads, step, [](size_t n) { return static_cast<int>(n % 89); }), 0u)
              << algorithm << "@" << name_of(transport) << (overlap ? " overlapped" : " sequential") << " step " << step;
      }
}

// Weighted ranks (--balance): rank r's gradient counts r + 1 times in the average.
TEST(GradientExchange, WeightedRanksGiveTheWeightedMean) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<GradientTensor> tensors = {{"a", 300}, {"b", 16}, {"c", 1000}};
  for (Progress progress : {Progress::thread, Progress::poll}) {
    ExchangeConfig config;
    config.progress = progress;
    Gradients g(tensors);
    GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, BucketStrategy::ddp, 0.001), g.pointers);
    exchange.set_weight(static_cast<float>(rank + 1));
    EXPECT_EQ(wrong_after_step(exchange, g, 0, [](size_t n) { return static_cast<int>(n % 31); }, true), 0u)
        << progress_name(progress);
  }
}

// Polled progress: no thread, MPI_Iallreduce posted by tensor_ready and tested there; the same
// exact averages for every strategy, and a clear refusal where it cannot be used.
TEST(GradientExchange, PolledProgressGivesTheSameAverages) {
  std::vector<GradientTensor> tensors;
  const size_t sizes[] = {432, 16, 16, 2304, 16, 16, 9216, 32, 32, 640, 10};
  for (size_t i = 0; i < std::size(sizes); ++i) tensors.push_back({std::string("t").append(std::to_string(i)), sizes[i]});
  for (BucketStrategy strategy :
       {BucketStrategy::per_tensor, BucketStrategy::fixed, BucketStrategy::ddp, BucketStrategy::partition}) {
    ExchangeConfig config;
    config.progress = Progress::poll;
    Gradients grads(tensors);
    GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, strategy, 0.01, 1000), grads.pointers);
    for (int step = 0; step < 3; ++step)
      EXPECT_EQ(wrong_after_step(exchange, grads, step, [](size_t n) { return static_cast<int>(n % 89); }), 0u)
          << bucket_strategy_name(strategy) << " polled, step " << step;
    for (size_t b = 0; b < exchange.plan().buckets.size(); ++b)
      EXPECT_LE(exchange.bucket_start()[b], exchange.bucket_end()[b]) << "bucket " << b;
  }
  ExchangeConfig schedule;
  schedule.progress = Progress::poll;
  schedule.algorithm = "ring";
  Gradients grads(tensors);
  EXPECT_THROW(GradientExchange(MPI_COMM_WORLD, schedule, plan_buckets(tensors, BucketStrategy::ddp, 1), grads.pointers),
               UsageError);
}

// The cycle strategy has no plan to follow: Horovod's loop fuses what its cycles find, live
// (CycleExchange). A cycle plan given here is refused, not replayed on a grid of ticks.
TEST(GradientExchange, RefusesACyclePlan) {
  const std::vector<GradientTensor> tensors = {{"t0", 50}, {"t1", 100}};
  BucketPlan plan = empty_cycle_plan(tensors, 0.001);
  fuse_cycle(plan, {1, 0}, 1, 1.0);  // one cycle found both
  Gradients grads(tensors);
  EXPECT_THROW(GradientExchange(MPI_COMM_WORLD, ExchangeConfig{}, plan, grads.pointers), std::invalid_argument);
}

// Compressed buckets: fp16 carries small integers exactly, so the averages are exact too; and
// top-k at ratio 1 sends everything (every value is in the top k).
TEST(GradientExchange, CompressedBucketsAverageExactlyWhereTheCodeIsExact) {
  const std::vector<GradientTensor> tensors = {{"a", 300}, {"b", 16}, {"c", 1000}, {"d", 10}};
  for (const char* compressor : {"fp16", "topk"}) {
    ExchangeConfig config;
    config.compressor = compressor;
    config.compressor_params.ratio = 1.0;
    Gradients grads(tensors);
    GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, BucketStrategy::ddp, 0.001), grads.pointers);
    for (int step = 0; step < 2; ++step)
      EXPECT_EQ(wrong_after_step(exchange, grads, step, [](size_t n) { return static_cast<int>(1 + n % 13); }), 0u)
          << compressor << " step " << step;
  }
}

// PowerSGD in the exchange sees each bucket's tensors as the model's shapes: rank-1 matrices
// (every rank's a multiple of the same one) and vectors average whole at rank 2, fused or not;
// with the shapes unknown, each tensor viewed near-square, they do not.
TEST(GradientExchange, PowerSgdCompressesEachTensorOfABucketAsItsMatrix) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const std::vector<GradientTensor> shaped = {{"conv", 16 * 27, 16}, {"bn", 16, 1}, {"fc", 10 * 64, 10}, {"bias", 10, 1}};
  std::vector<GradientTensor> unshaped = shaped;
  for (GradientTensor& t : unshaped) t.rows = 0;
  // Tensor k's value (i, j) on a rank: (rank + 1) sin(i + k) cos(0.3 j); vectors (rank + 1) (j - 5).
  auto value = [&](size_t k, size_t i, size_t j, double weight) {
    return shaped[k].rows == 1 ? weight * (static_cast<double>(j) - 5.0)
                               : weight * std::sin(static_cast<double>(i + k)) * std::cos(0.3 * static_cast<double>(j));
  };
  const double mean_weight = (nranks + 1) / 2.0;
  for (BucketStrategy strategy : {BucketStrategy::per_tensor, BucketStrategy::fixed}) {
    for (bool shapes_known : {true, false}) {
      const std::vector<GradientTensor>& tensors = shapes_known ? shaped : unshaped;
      ExchangeConfig config;
      config.compressor = "powersgd";
      config.compressor_params.rank = 2;
      config.error_feedback = false;
      Gradients g(tensors);
      GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, strategy, 1.0), g.pointers);
      for (size_t k = 0; k < tensors.size(); ++k) {
        const size_t cols = shaped[k].count / shaped[k].rows;
        for (size_t e = 0; e < tensors[k].count; ++e) g.values[k][e] = static_cast<float>(value(k, e / cols, e % cols, rank + 1.0));
      }
      exchange.begin_step();
      for (size_t k = tensors.size(); k-- > 0;) exchange.tensor_ready(k);
      exchange.finish();
      double worst = 0;
      for (size_t k = 0; k < tensors.size(); ++k) {
        const size_t cols = shaped[k].count / shaped[k].rows;
        for (size_t e = 0; e < tensors[k].count; ++e)
          worst = std::max(worst, std::fabs(g.values[k][e] - value(k, e / cols, e % cols, mean_weight)));
      }
      if (shapes_known)
        EXPECT_LT(worst, 1e-4) << bucket_strategy_name(strategy);
      else
        EXPECT_GT(worst, 1e-2) << bucket_strategy_name(strategy) << ", shapes unknown";
    }
  }
}

// The carried state (residuals, PowerSGD's warm start) and the step, handed to a fresh exchange,
// make it continue exactly as the first: the same averages at the next step, bit for bit. State
// that fits no bucket is refused.
TEST(GradientExchange, CarriedStateContinuesInAFreshExchange) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<GradientTensor> tensors = {{"a", 300}, {"b", 16}, {"c", 1000}};
  const BucketPlan plan = plan_buckets(tensors, BucketStrategy::ddp, 0.002);
  for (const char* compressor : {"powersgd", "randomk", "qsgd"}) {
    ExchangeConfig config;
    config.compressor = compressor;
    Gradients first(tensors), second(tensors);
    GradientExchange original(MPI_COMM_WORLD, config, plan, first.pointers);
    auto fill = [&](Gradients& g, int step) {
      for (size_t k = 0; k < g.values.size(); ++k)
        for (size_t i = 0; i < g.values[k].size(); ++i)
          g.values[k][i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i + 7 * k + 31 * step + 101 * rank)));
    };
    auto step_through = [&](GradientAverager& exchange, Gradients& g, int step) {
      fill(g, step);
      exchange.begin_step();
      for (size_t k = g.values.size(); k-- > 0;) exchange.tensor_ready(k);
      exchange.finish();
    };
    for (int step = 0; step < 3; ++step) step_through(original, first, step);
    const std::vector<NamedFloats> carried = original.carried_state();
    EXPECT_FALSE(carried.empty()) << compressor;
    GradientExchange resumed(MPI_COMM_WORLD, config, plan, second.pointers);
    resumed.set_step(3);
    resumed.restore_carried_state(carried);
    step_through(original, first, 3);
    step_through(resumed, second, 3);
    EXPECT_EQ(first.values, second.values) << compressor << ": the fresh exchange's step 3 differs";
    EXPECT_THROW(resumed.restore_carried_state({{"bucket99.residual", {1.0f}}}), std::invalid_argument);
    EXPECT_THROW(resumed.restore_carried_state({{carried_name(0, "residual"), {1.0f, 2.0f}}}), std::invalid_argument);
  }
}

}  // namespace
}  // namespace sb
