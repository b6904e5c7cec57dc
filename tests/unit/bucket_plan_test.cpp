// Bucket packing: every element of every tensor in exactly one bucket, for every strategy and
// size; buckets in backward order; each strategy's own rule (caps, DDP's small first bucket,
// partitions of about 1M parameters).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "collectives/buckets/bucket_plan.hpp"
#include "common/usage_error.hpp"
#include "tests/unit/cycle_grid.hpp"

namespace sb {
namespace {

// ResNet-50-like sizes: many small BN vectors, a few multi-million convolutions and the fc.
std::vector<GradientTensor> tensors() {
  std::vector<GradientTensor> t;
  const size_t sizes[] = {9408, 64, 64, 4096, 64, 64, 36864, 256, 256, 589824, 512, 512, 2359296, 2048, 2048,
                          1048576, 2048, 2048, 2048000, 1000};
  for (size_t i = 0; i < std::size(sizes); ++i) t.push_back({std::string("t").append(std::to_string(i)), sizes[i]});
  return t;
}

TEST(BucketPlan, EveryElementOfEveryTensorIsInExactlyOneBucket) {
  const std::vector<GradientTensor> t = tensors();
  for (BucketStrategy strategy :
       {BucketStrategy::per_tensor, BucketStrategy::fixed, BucketStrategy::ddp, BucketStrategy::partition}) {
    for (double mb : {0.001, 0.25, 1.0, 4.0, 25.0, 256.0}) {
      const BucketPlan plan = plan_buckets(t, strategy, mb, 1 << 20);
      std::vector<std::vector<int>> covered(t.size());
      for (size_t k = 0; k < t.size(); ++k) covered[k].assign(t[k].count, 0);
      size_t total = 0;
      for (const Bucket& b : plan.buckets) {
        size_t offset = 0;
        for (const BucketPiece& p : b.pieces) {
          EXPECT_EQ(p.bucket_offset, offset);
          offset += p.count;
          for (size_t i = p.offset; i < p.offset + p.count; ++i) ++covered[p.tensor][i];
        }
        EXPECT_EQ(offset, b.count);
        total += b.count;
      }
      EXPECT_EQ(total, plan.total_count);
      for (size_t k = 0; k < t.size(); ++k)
        for (int c : covered[k]) ASSERT_EQ(c, 1) << bucket_strategy_name(strategy) << " " << mb << " MiB, tensor " << k;
      // Backward order: the first bucket holds the last tensor.
      EXPECT_EQ(plan.buckets.front().pieces.front().tensor, t.size() - 1);
    }
  }
}

TEST(BucketPlan, StrategiesFollowTheirRules) {
  const std::vector<GradientTensor> t = tensors();
  EXPECT_EQ(plan_buckets(t, BucketStrategy::per_tensor, 25).buckets.size(), t.size());
  // fixed at 256 MiB: everything in one allreduce.
  EXPECT_EQ(plan_buckets(t, BucketStrategy::fixed, 256).buckets.size(), 1u);
  // ddp: the first bucket is capped at 1 MiB (the fc bias, then the 8 MB fc weight alone).
  const BucketPlan ddp = plan_buckets(t, BucketStrategy::ddp, 25);
  EXPECT_EQ(ddp.buckets[0].count, 1000u);
  for (size_t b = 1; b < ddp.buckets.size(); ++b)
    EXPECT_TRUE(ddp.buckets[b].count * 4 <= (25u << 20) || ddp.buckets[b].pieces.size() == 1);
  // partition: the 2.36M-parameter tensor is cut into 3 pieces of at most 1M.
  const BucketPlan parts = plan_buckets(t, BucketStrategy::partition, 4, 1 << 20);
  size_t pieces_of_12 = 0;
  for (const Bucket& b : parts.buckets) {
    EXPECT_LE(b.count, size_t{1} << 20);
    for (const BucketPiece& p : b.pieces) pieces_of_12 += p.tensor == 12;
    EXPECT_EQ(b.priority, b.pieces.front().tensor);
  }
  EXPECT_EQ(pieces_of_12, 3u);
  EXPECT_EQ(parts.buckets_of_tensor[12].size(), 3u);
  EXPECT_THROW(parse_bucket_strategy("horovod"), UsageError);
  EXPECT_THROW(plan_buckets(t, BucketStrategy::ddp, -1), UsageError);
}

// A bucket larger than every gradient is one bucket (partitions: one per tensor), however large.
// Casting the element count of 1e308 MiB to size_t had given 0: a bucket per tensor for fixed,
// and a partition of one element (millions of buckets) for partition.
TEST(BucketPlan, ABucketPastEveryGradientIsOneBucketHoweverLarge) {
  const std::vector<GradientTensor> t = tensors();
  for (double mb : {1e6, 1e13, 1e19, 1e308}) {
    SCOPED_TRACE(mb);
    EXPECT_EQ(plan_buckets_swept(t, BucketStrategy::fixed, mb).buckets.size(), 1u);
    EXPECT_EQ(plan_buckets_swept(t, BucketStrategy::partition, mb).buckets.size(), t.size());
  }
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// What PowerSGD sees of each bucket: whole matrices as themselves, vectors as vectors, a piece
// of whole rows as those rows, a piece cut between rows (or of unknown shape) near-square.
TEST(BucketPlan, TensorViewsFollowThePiecesShapes) {
  const std::vector<GradientTensor> t = {{"conv", 64 * 27, 64}, {"bn", 64, 1}, {"fc", 10 * 100, 10}, {"x", 500, 0}};
  const BucketPlan fused = plan_buckets(t, BucketStrategy::fixed, 1.0);
  ASSERT_EQ(fused.buckets.size(), 1u);
  // Backward order: the last tensor first.
  EXPECT_EQ(bucket_tensor_views(fused, 0),
            (std::vector<TensorView>{{500, 0}, {1000, 10}, {64, 1}, {64 * 27, 64}}));
  // Partitions of 500 elements: fc in two pieces of 5 rows, conv in four of 16 rows.
  auto views_of = [](const BucketPlan& plan) {
    std::vector<TensorView> all;
    for (size_t b = 0; b < plan.buckets.size(); ++b) {
      const std::vector<TensorView> views = bucket_tensor_views(plan, b);
      EXPECT_EQ(views.size(), plan.buckets[b].pieces.size());
      all.insert(all.end(), views.begin(), views.end());
    }
    return all;
  };
  EXPECT_EQ(views_of(plan_buckets(t, BucketStrategy::partition, 1.0, 500)),
            (std::vector<TensorView>{{500, 0}, {500, 5}, {500, 5}, {64, 1}, {432, 16}, {432, 16}, {432, 16}, {432, 16}}));
  // Of 400: fc in pieces of 333, 333 and 334 values, cut between its rows of 100.
  const std::vector<TensorView> cut = views_of(plan_buckets(t, BucketStrategy::partition, 1.0, 400));
  ASSERT_GE(cut.size(), 5u);
  EXPECT_EQ((std::vector<TensorView>(cut.begin() + 2, cut.begin() + 5)),
            (std::vector<TensorView>{{333, 0}, {333, 0}, {334, 0}}));
  // A tensor that is not whole rows is refused.
  EXPECT_THROW(plan_buckets({{"bad", 10, 3}}, BucketStrategy::fixed, 1.0), std::invalid_argument);
}

// The cycle strategy, Horovod's background loop: what each tick finds ready, fused first-fit.
namespace cycle_plans {

// Elements in a threshold of `elements` fp32 values, as --bucket-mb gives it.
double mb_of(size_t elements) { return static_cast<double>(elements) * sizeof(float) / (1024.0 * 1024.0); }

}  // namespace cycle_plans

TEST(CyclePlan, EachTickFusesWhatItFindsReadyFirstFitUnderTheThreshold) {
  using namespace cycle_plans;
  // Model order t0..t4; backward hands over t4, t3 in the first millisecond, t2, t1, t0 in the
  // second (t0 exactly on the 3 ms tick is the third's).
  const std::vector<GradientTensor> t = {{"t0", 10}, {"t1", 100}, {"t2", 300}, {"t3", 200}, {"t4", 50}};
  const std::vector<double> ready = {0.003, 0.0019, 0.0012, 0.0008, 0.0002};
  // Threshold 320 values: tick 1 fuses t4 + t3 (250); tick 2 finds t2 (300) then t1 (100), which
  // does not fit beside it and starts the next bucket; tick 3 takes t0.
  const sim::CyclePrediction grid = cycle_grid(t, ready, 0.001, mb_of(320));
  const BucketPlan& plan = grid.plan;
  EXPECT_EQ(tensors_of(plan), (std::vector<std::vector<size_t>>{{4, 3}, {2}, {1}, {0}}));
  ASSERT_EQ(plan.buckets.size(), 4u);
  EXPECT_EQ(grid.step.bucket_start_s, (std::vector<double>{0.001, 0.002, 0.002, 0.003}));
  EXPECT_EQ(plan.buckets[3].tick, 3u);
  EXPECT_EQ(plan.total_count, 660u);
  EXPECT_EQ(plan.strategy, BucketStrategy::cycle);
  // First fit, as Horovod fuses its responses: a gradient that does not fit is passed over, and a
  // later one of the same tick that does joins the bucket (u2 then u0; u1 alone).
  const std::vector<GradientTensor> u = {{"u0", 30}, {"u1", 300}, {"u2", 200}};
  const std::vector<double> together = {0.0005, 0.0004, 0.0003};  // u2, u1, u0 all in tick 1
  EXPECT_EQ(tensors_of(cycle_grid(u, together, 0.001, mb_of(240)).plan),
            (std::vector<std::vector<size_t>>{{2, 0}, {1}}));
  // Threshold 0: no fusion, a bucket per gradient; one long cycle with room: one bucket on its tick.
  EXPECT_EQ(cycle_grid(t, ready, 0.001, 0).plan.buckets.size(), t.size());
  const sim::CyclePrediction one = cycle_grid(t, ready, 0.5, 128);
  ASSERT_EQ(one.plan.buckets.size(), 1u);
  EXPECT_EQ(one.step.bucket_start_s, std::vector<double>{0.5});
  // A gradient ready at backward's start is taken by the tick at 0.
  EXPECT_EQ(cycle_grid({{"a", 4}}, {0.0}, 0.001, 1).step.bucket_start_s, std::vector<double>{0.0});
}

// Fusing cycle by cycle by hand (empty_cycle_plan, then fuse_cycle with what each cycle found)
// gives the grid's plan of the whole step.
TEST(CyclePlan, FusingCycleByCycleGivesTheWholeStepsPlan) {
  using namespace cycle_plans;
  const std::vector<GradientTensor> t = {{"t0", 10}, {"t1", 100}, {"t2", 300}, {"t3", 200}, {"t4", 50}};
  const BucketPlan whole = cycle_grid(t, {0.003, 0.0019, 0.0012, 0.0008, 0.0002}, 0.001, mb_of(320)).plan;
  BucketPlan live = empty_cycle_plan(t, 0.001);
  EXPECT_TRUE(live.buckets.empty());
  EXPECT_EQ(live.total_count, 660u);
  fuse_cycle(live, {4, 3}, 1, mb_of(320));
  EXPECT_EQ(tensors_of(live), (std::vector<std::vector<size_t>>{{4, 3}}));
  fuse_cycle(live, {}, 2, mb_of(320));  // an idle cycle adds nothing
  fuse_cycle(live, {2, 1}, 2, mb_of(320));
  fuse_cycle(live, {0}, 3, mb_of(320));
  EXPECT_EQ(tensors_of(live), tensors_of(whole));
  ASSERT_EQ(live.buckets.size(), whole.buckets.size());
  for (size_t b = 0; b < live.buckets.size(); ++b) {
    EXPECT_EQ(live.buckets[b].tick, whole.buckets[b].tick) << "bucket " << b;
  }
  EXPECT_EQ(live.buckets_of_tensor, whole.buckets_of_tensor);
  EXPECT_THROW(empty_cycle_plan(t, 0), UsageError);
}

TEST(CyclePlan, EveryTensorIsInOneBucketTakenByTheFirstTickAtOrAfterIt) {
  const std::vector<GradientTensor> t = tensors();
  std::vector<double> ready(t.size());
  for (size_t k = 0; k < t.size(); ++k) ready[k] = 0.0004 * static_cast<double>(t.size() - k) + 1e-5 * (k % 3);
  for (double cycle_s : {0.0001, 0.001, 0.0035, 1.0})
    for (double mb : {0.0, 0.01, 1.0, 25.0, 256.0}) {
      const sim::CyclePrediction grid = cycle_grid(t, ready, cycle_s, mb);
      const BucketPlan& plan = grid.plan;
      std::vector<int> seen(t.size(), 0);
      double last_tick = 0;
      for (size_t i = 0; i < plan.buckets.size(); ++i) {
        const Bucket& b = plan.buckets[i];
        const double start = grid.step.bucket_start_s[i];  // its tick: one rank reduces in no time
        EXPECT_GE(start, last_tick) << "ticks in order";
        last_tick = start;
        if (b.pieces.size() > 1) {
          EXPECT_LE(b.count * sizeof(float), mb * 1024 * 1024) << "fused past the threshold";
        }
        for (const BucketPiece& p : b.pieces) {
          ++seen[p.tensor];
          EXPECT_EQ(p.offset, 0u) << "tensors are never cut";
          EXPECT_EQ(p.count, t[p.tensor].count);
          EXPECT_GE(start, ready[p.tensor] - 1e-12) << "reduced before it is ready";
          EXPECT_LT(start, ready[p.tensor] + cycle_s) << "a tick passed it by";
        }
      }
      for (size_t k = 0; k < t.size(); ++k) EXPECT_EQ(seen[k], 1) << "tensor " << k << " at " << cycle_s << " s, " << mb;
      for (size_t k = 0; k < t.size(); ++k) ASSERT_EQ(plan.buckets_of_tensor[k].size(), 1u);
    }
}

TEST(CyclePlan, NeedsTimesAndAPositiveCycle) {
  const std::vector<GradientTensor> t = tensors();
  EXPECT_THROW(plan_buckets(t, BucketStrategy::cycle, 128), UsageError);
  const std::vector<double> ready(t.size(), 0.001);
  EXPECT_THROW(cycle_grid(t, ready, 0, 128), UsageError);
  EXPECT_THROW(cycle_grid(t, ready, -1, 128), UsageError);
  EXPECT_THROW(cycle_grid(t, ready, 0.001, -1), UsageError);
  // A millisecond of backward at 0.1 ns cycles: ten million cycles, each priced, refused.
  EXPECT_THROW(cycle_grid(t, ready, 1e-10, 128), UsageError);
  EXPECT_EQ(cycle_grid(t, ready, 1e-6, 128).cycles(), 1001u);
  EXPECT_EQ(parse_cycle_times("0.5,1,5"), (std::vector<double>{0.5, 1, 5}));
  for (const char* bad : {"0", "0.001", "1001", "nan", "inf", "1ms", "", "1,,2", "1,2,1"})
    EXPECT_THROW(parse_cycle_times(bad), UsageError) << bad;
  EXPECT_EQ(parse_bucket_strategy("cycle"), BucketStrategy::cycle);
  EXPECT_EQ(parse_bucket_strategies("all").back(), BucketStrategy::cycle);
  EXPECT_EQ(parse_bucket_strategies("ddp,cycle").size(), 2u);
  EXPECT_THROW(parse_bucket_strategies(""), UsageError);
}

}  // namespace
}  // namespace sb
