#pragma once
// Gradient buckets: how a model's gradient tensors are fused into the allreduces of one step.
// Backward produces gradients in reverse model order; a bucket can be reduced the moment its last
// piece is ready. Strategies:
//   per-tensor  one allreduce per tensor (no fusion);
//   fixed       tensor fusion by size alone: tensors in backward order packed while the bucket
//               stays under the threshold (--bucket-mb, 128 MiB by default in Horovod): Horovod
//               with a cycle time of zero;
//   cycle       Horovod's tensor fusion as its background loop does it: every cycle (--cycle-ms,
//               1 ms by default since Horovod 0.21, 5 ms before) the gradients that became ready
//               since the last one are fused, in the order they became ready, into buckets under
//               the threshold, and reduced from that tick on. The buckets depend on when backward
//               produces each gradient and on how long each cycle's work takes: sb-train and
//               sb-buckets fuse what each cycle of a live loop finds ready everywhere
//               (cycle_exchange.hpp), and sb-dryrun runs that loop on its model of the machine
//               (sim/step_model.hpp's predict_cycle_step);
//   ddp         PyTorch DDP: reverse order, a small first bucket (1 MiB) so that communication
//               starts early, then buckets capped at --bucket-mb (25 MiB by default in DDP);
//   partition   ByteScheduler: every tensor cut into partitions of about partition_elements
//               parameters, each its own bucket, sent in priority order (front layers first)
//               among those ready.
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/compress/compressor.hpp"

namespace sb {

enum class BucketStrategy { per_tensor, fixed, ddp, partition, cycle };

// "per-tensor", "fixed", "ddp", "partition", "cycle"; throws UsageError otherwise.
BucketStrategy parse_bucket_strategy(const std::string& name);
std::string bucket_strategy_name(BucketStrategy strategy);
// A comma-separated list of strategy names, or "all" (every strategy, in the order above).
std::vector<BucketStrategy> parse_bucket_strategies(const std::string& list);
// The default --bucket-mb of each strategy (Horovod 128, DDP 25; partition: the credit).
double default_bucket_mb(BucketStrategy strategy);
// Horovod's cycle time since 0.21 (HOROVOD_CYCLE_TIME, horovodrun --cycle-time-ms).
inline constexpr double kDefaultCycleMs = 1;
// --cycle-ms: comma-separated cycle times in ms, each 0.01 to 1000, none twice; throws UsageError.
std::vector<double> parse_cycle_times(const std::string& list);

struct GradientTensor {
  std::string name;
  size_t count = 0;  // fp32 elements
  // Its first dimension, the rows of the matrix a low-rank compressor sees (a convolution's K of
  // K x C x R x S); 1 for a vector; 0 when not known.
  size_t rows = 0;
};

// A contiguous range of one tensor, at an offset of its bucket's fused buffer.
struct BucketPiece {
  size_t tensor = 0;  // index in the model's (forward) order
  size_t offset = 0;  // first element within the tensor
  size_t count = 0;
  size_t bucket_offset = 0;
};

struct Bucket {
  std::vector<BucketPiece> pieces;
  size_t count = 0;      // fp32 elements in all
  size_t priority = 0;   // the smallest tensor index in it: lower is nearer the input, sent first
  // cycle: the cycle that took it, numbered from 0 at backward's start (it starts no sooner than
  // tick x cycle_s after it, later when a cycle before it ran long); 0 for every other strategy.
  size_t tick = 0;
};

struct BucketPlan {
  BucketStrategy strategy = BucketStrategy::ddp;
  std::vector<Bucket> buckets;  // in the order backward completes them
  // Which buckets hold a piece of each tensor.
  std::vector<std::vector<size_t>> buckets_of_tensor;
  size_t total_count = 0;
  std::vector<GradientTensor> tensors;  // forward order, as planned
  double cycle_s = 0;                   // cycle: the time between cycles; 0 for every other strategy
};

// The 64-bit words of a cycle's negotiation, a bit per tensor, as Horovod's response cache
// allreduces them (MPI_BAND) every cycle to agree on what is ready everywhere.
inline size_t negotiation_words(const BucketPlan& plan) { return (plan.tensors.size() + 63) / 64; }

// tensors in forward (model) order; backward order is the reverse. bucket_mb in MiB of fp32.
// Throws UsageError for cycle: its buckets are what its cycles find (empty_cycle_plan, fuse_cycle).
BucketPlan plan_buckets(const std::vector<GradientTensor>& tensors, BucketStrategy strategy, double bucket_mb,
                        size_t partition_elements = size_t{1} << 20);
// The order backward hands tensors over, given when each is ready (ready_s[k], seconds after
// backward starts): by time, ties in backward order (the later tensor first). The replay reports
// them so, and the simulated cycles fuse them so.
std::vector<size_t> readiness_order(const std::vector<double>& ready_s);
// The cycle strategy's buckets, made as Horovod's loop goes (cycle_exchange.hpp, and the
// simulator's predict_cycle_step): a cycle plan with no bucket yet (UsageError unless cycle_s > 0),
// then each cycle's fusion of the gradients newly `ready` everywhere, in the order backward handed
// them over, appended to it, buckets_of_tensor kept up to date. As Horovod fuses its responses,
// first fit: each bucket starts with the first gradient not yet taken and takes every later one
// of the cycle that still fits under threshold_mb (0: no fusion); a gradient larger than the
// threshold is a bucket alone; tensors are never cut. Each bucket's tick is `tick`.
BucketPlan empty_cycle_plan(const std::vector<GradientTensor>& tensors, double cycle_s);
void fuse_cycle(BucketPlan& plan, const std::vector<size_t>& ready, size_t tick, double threshold_mb);
// The tensors of a bucket in its fused buffer's order, as the compressors that work tensor by
// tensor see them (PowerSGD's matrices, TernGrad's scales): a piece that is whole rows of a
// matrix is a matrix of those rows; a vector stays a vector; a piece cut between rows
// (partition) or of a tensor of unknown shape is viewed near-square.
std::vector<TensorView> bucket_tensor_views(const BucketPlan& plan, size_t bucket);
// The bucket sizes (MiB) that sb-buckets and sb-dryrun train sweep: min_mb, then each times
// `factor` (> 1) up to max_mb (included, up to rounding). Each size is a configuration measured or
// simulated per strategy, so a sweep of more than kMostBucketSizes (a factor near 1, or a largest
// size far past any model's gradients) throws UsageError naming `flags`: it would run for hours,
// or without end, what a few sizes show.
inline constexpr size_t kMostBucketSizes = 100;
std::vector<double> bucket_size_sweep(double min_mb, double max_mb, double factor, const std::string& flags);
// As sb-buckets sweeps them: one size, which is also partition's partition size.
BucketPlan plan_buckets_swept(const std::vector<GradientTensor>& tensors, BucketStrategy strategy, double bucket_mb);

}  // namespace sb
