#include "collectives/buckets/bucket_plan.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb {

BucketStrategy parse_bucket_strategy(const std::string& name) {
  if (name == "per-tensor") return BucketStrategy::per_tensor;
  if (name == "fixed") return BucketStrategy::fixed;
  if (name == "ddp") return BucketStrategy::ddp;
  if (name == "partition") return BucketStrategy::partition;
  if (name == "cycle") return BucketStrategy::cycle;
  throw UsageError("unknown bucket strategy '" + name + "' (per-tensor, fixed, ddp, partition, cycle)");
}

std::string bucket_strategy_name(BucketStrategy strategy) {
  switch (strategy) {
    case BucketStrategy::per_tensor: return "per-tensor";
    case BucketStrategy::fixed: return "fixed";
    case BucketStrategy::ddp: return "ddp";
    case BucketStrategy::partition: return "partition";
    case BucketStrategy::cycle: return "cycle";
  }
  return "?";
}

std::vector<BucketStrategy> parse_bucket_strategies(const std::string& list) {
  if (list == "all")
    return {BucketStrategy::per_tensor, BucketStrategy::fixed, BucketStrategy::ddp, BucketStrategy::partition,
            BucketStrategy::cycle};
  std::vector<BucketStrategy> strategies;
  for (const std::string& name : split_list(list)) strategies.push_back(parse_bucket_strategy(name));  // "": unknown
  return strategies;
}

std::vector<double> parse_cycle_times(const std::string& list) {
  std::vector<double> times;
  for (const std::string& word : split_list(list)) {
    double ms = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), ms);
    if (ec != std::errc() || end != word.data() + word.size() || !(ms >= 0.01 && ms <= 1000))
      throw UsageError("--cycle-ms: '" + word + "' is not a cycle time of 0.01 to 1000 ms");
    if (std::find(times.begin(), times.end(), ms) != times.end())
      throw UsageError("--cycle-ms: " + word + " is given twice");
    times.push_back(ms);
  }
  return times;
}

double default_bucket_mb(BucketStrategy strategy) {
  switch (strategy) {
    case BucketStrategy::fixed:
    case BucketStrategy::cycle: return 128;
    case BucketStrategy::ddp: return 25;
    case BucketStrategy::partition: return 4;  // ~1M fp32 parameters per partition
    case BucketStrategy::per_tensor: return 0;
  }
  return 25;
}

namespace {

// The fp32 elements in `mb` MiB, capped at 2^63: casting a larger double is undefined, and had
// made a 1e308 MiB bucket a cap of 0 elements, a bucket per tensor under the name of one bucket.
size_t float_elements_in(double mb) {
  const double elements = mb * kBytesPerMiB / sizeof(float);
  if (!(elements > 0)) return 0;
  return elements < 0x1p63 ? static_cast<size_t>(elements) : size_t{1} << 63;
}

class Builder {
 public:
  explicit Builder(BucketPlan& plan) : plan_(plan) {}
  void add(size_t tensor, size_t offset, size_t count) {
    if (plan_.buckets.empty() || open_ == false) {
      plan_.buckets.emplace_back();
      plan_.buckets.back().priority = tensor;
      open_ = true;
    }
    Bucket& b = plan_.buckets.back();
    b.pieces.push_back({tensor, offset, count, b.count});
    b.count += count;
    b.priority = std::min(b.priority, tensor);
  }
  void close() { open_ = false; }
  void take_at(size_t tick) { plan_.buckets.back().tick = tick; }
  size_t open_count() const { return open_ && !plan_.buckets.empty() ? plan_.buckets.back().count : 0; }

 private:
  BucketPlan& plan_;
  bool open_ = false;
};

void require_whole_rows(const std::vector<GradientTensor>& tensors) {
  for (const GradientTensor& t : tensors)
    if (t.rows > 0 && t.count % t.rows != 0)
      throw std::invalid_argument("tensor " + t.name + ": " + std::to_string(t.count) + " values are not " +
                                  std::to_string(t.rows) + " rows");
}

void index_buckets_of_tensors(BucketPlan& plan) {
  plan.buckets_of_tensor.assign(plan.tensors.size(), {});
  for (size_t b = 0; b < plan.buckets.size(); ++b)
    for (const BucketPiece& piece : plan.buckets[b].pieces)
      if (plan.buckets_of_tensor[piece.tensor].empty() || plan.buckets_of_tensor[piece.tensor].back() != b)
        plan.buckets_of_tensor[piece.tensor].push_back(b);
}

}  // namespace

BucketPlan plan_buckets(const std::vector<GradientTensor>& tensors, BucketStrategy strategy, double bucket_mb,
                        size_t partition_elements) {
  if (bucket_mb < 0) throw UsageError("--bucket-mb must not be negative");
  if (partition_elements == 0) throw UsageError("partitions need at least one element");
  if (strategy == BucketStrategy::cycle)
    throw UsageError("the cycle strategy fuses what each cycle finds ready, so it is planned from a backward profile's "
                     "times: sb-buckets and sb-dryrun train run it, sb-train does not");
  require_whole_rows(tensors);
  BucketPlan plan;
  plan.strategy = strategy;
  plan.tensors = tensors;
  Builder builder(plan);
  const size_t cap = float_elements_in(bucket_mb);
  const size_t first_cap = float_elements_in(1.0);
  for (size_t k = tensors.size(); k-- > 0;) {  // backward order
    const size_t count = tensors[k].count;
    plan.total_count += count;
    switch (strategy) {
      case BucketStrategy::per_tensor:
        builder.add(k, 0, count);
        builder.close();
        break;
      case BucketStrategy::fixed:
      case BucketStrategy::ddp: {
        // DDP's first bucket is small so that the first allreduce starts early in backward.
        const size_t limit = strategy == BucketStrategy::ddp && plan.buckets.size() <= 1 ? std::min(cap, first_cap) : cap;
        if (builder.open_count() > 0 && builder.open_count() + count > limit) builder.close();
        builder.add(k, 0, count);
        if (builder.open_count() >= limit) builder.close();
        break;
      }
      case BucketStrategy::cycle: break;  // refused above
      case BucketStrategy::partition: {
        const size_t parts = std::max<size_t>((count + partition_elements - 1) / partition_elements, 1);
        for (size_t p = 0; p < parts; ++p) {
          const size_t begin = count * p / parts, end = count * (p + 1) / parts;
          builder.add(k, begin, end - begin);
          builder.close();
        }
        break;
      }
    }
  }
  index_buckets_of_tensors(plan);
  return plan;
}

BucketPlan empty_cycle_plan(const std::vector<GradientTensor>& tensors, double cycle_s) {
  if (!(cycle_s > 0) || !std::isfinite(cycle_s)) throw UsageError("the cycle time must be positive");
  require_whole_rows(tensors);
  BucketPlan plan;
  plan.strategy = BucketStrategy::cycle;
  plan.cycle_s = cycle_s;
  plan.tensors = tensors;
  for (const GradientTensor& t : tensors) plan.total_count += t.count;
  plan.buckets_of_tensor.assign(tensors.size(), {});
  return plan;
}

void fuse_cycle(BucketPlan& plan, const std::vector<size_t>& ready, size_t tick, double threshold_mb) {
  const size_t cap = float_elements_in(threshold_mb);
  const size_t first_bucket = plan.buckets.size();
  Builder builder(plan);
  std::vector<bool> taken(ready.size(), false);
  for (size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]) continue;
    builder.add(ready[i], 0, plan.tensors.at(ready[i]).count);
    builder.take_at(tick);
    taken[i] = true;
    for (size_t j = i + 1; j < taken.size(); ++j) {
      const size_t count = plan.tensors.at(ready[j]).count;
      if (!taken[j] && builder.open_count() + count <= cap) {
        builder.add(ready[j], 0, count);
        taken[j] = true;
      }
    }
    builder.close();
  }
  plan.buckets_of_tensor.resize(plan.tensors.size());
  for (size_t b = first_bucket; b < plan.buckets.size(); ++b)
    for (const BucketPiece& piece : plan.buckets[b].pieces) plan.buckets_of_tensor[piece.tensor].push_back(b);
}

std::vector<size_t> readiness_order(const std::vector<double>& ready_s) {
  std::vector<size_t> order(ready_s.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ready_s[a] != ready_s[b] ? ready_s[a] < ready_s[b] : a > b; });
  return order;
}

std::vector<TensorView> bucket_tensor_views(const BucketPlan& plan, size_t bucket) {
  std::vector<TensorView> views;
  for (const BucketPiece& piece : plan.buckets.at(bucket).pieces) {
    const GradientTensor& t = plan.tensors.at(piece.tensor);
    size_t rows = 0;
    if (t.rows == 1) {
      rows = 1;
    } else if (t.rows > 1) {
      const size_t cols = t.count / t.rows;
      if (piece.offset % cols == 0 && piece.count % cols == 0) rows = piece.count / cols;
    }
    views.push_back({piece.count, rows});
  }
  return views;
}

std::vector<double> bucket_size_sweep(double min_mb, double max_mb, double factor, const std::string& flags) {
  std::vector<double> sizes;
  for (double mb = min_mb; mb <= max_mb * (1 + 1e-9); mb *= factor) {
    if (sizes.size() == kMostBucketSizes)
      throw UsageError(flags + " make a sweep of more than " + std::to_string(kMostBucketSizes) +
                       " bucket sizes: raise the factor or narrow the range");
    sizes.push_back(mb);
  }
  return sizes;
}

BucketPlan plan_buckets_swept(const std::vector<GradientTensor>& tensors, BucketStrategy strategy, double bucket_mb) {
  const size_t partition = std::max<size_t>(float_elements_in(bucket_mb), 1);
  return plan_buckets(tensors, strategy, bucket_mb, partition);
}

}  // namespace sb
