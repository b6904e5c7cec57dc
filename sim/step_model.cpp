#include "sim/step_model.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "common/usage_error.hpp"

namespace sb::sim {
namespace {

// When each bucket's last piece is ready.
std::vector<double> bucket_ready_s(const BackwardProfile& profile, const BucketPlan& plan) {
  std::vector<double> ready(plan.buckets.size(), 0.0);
  for (size_t b = 0; b < plan.buckets.size(); ++b)
    for (const BucketPiece& piece : plan.buckets[b].pieces) ready[b] = std::max(ready[b], profile.ready_s[piece.tensor]);
  return ready;
}

// One bucket on the communication thread: pack, allreduce in place, unpack scaled.
double bucket_seconds(size_t count, StepModel& model) {
  if (model.nranks == 1) return 0.0;
  const double bytes = static_cast<double>(count) * sizeof(float);
  return 2 * bytes / model.copy_rate + model.allreduce.seconds(count);
}

// A cycle's negotiation: an MPI_Allreduce of a bit per tensor, in 64-bit words.
double cycle_negotiation_seconds(const BucketPlan& plan, StepModel& model) {
  return model.nranks > 1 ? model.flags.seconds(negotiation_words(plan) * sizeof(uint64_t) / sizeof(float)) : 0.0;
}

}  // namespace

StepPrediction predict_step(const BackwardProfile& profile, const BucketPlan& plan, StepModel& model, bool overlap) {
  const size_t n = plan.buckets.size();
  StepPrediction p;
  p.bucket_start_s.assign(n, 0.0);
  p.bucket_end_s.assign(n, 0.0);
  std::vector<double> ready = bucket_ready_s(profile, plan);
  if (!overlap) std::fill(ready.begin(), ready.end(), profile.backward_s);
  if (plan.strategy == BucketStrategy::cycle && overlap)
    throw std::invalid_argument("the cycle strategy's buckets are what its cycles find: predict_cycle_step");
  const bool negotiate = plan.strategy == BucketStrategy::partition && model.nranks > 1;
  const double negotiation = negotiate ? model.flags.seconds((n + 3) / 4) : 0.0;

  std::vector<char> done(n, 0);
  double thread = 0;  // when the communication thread is next free
  for (size_t taken = 0; taken < n; ++taken) {
    size_t next = n;
    if (!negotiate) {
      next = taken;  // backward's completion order
      thread = std::max(thread, ready[next]);
    } else {
      // The most urgent of the buckets ready when the thread looks; if none is, wait for the
      // first to become ready.
      double soonest = 1e300;
      for (size_t b = 0; b < n; ++b)
        if (!done[b]) soonest = std::min(soonest, ready[b]);
      thread = std::max(thread, soonest) + negotiation;
      p.communication_s += negotiation;
      p.negotiation_s += negotiation;
      ++p.negotiations;
      for (size_t b = 0; b < n; ++b)
        if (!done[b] && ready[b] <= thread && (next == n || plan.buckets[b].priority < plan.buckets[next].priority))
          next = b;
    }
    done[next] = 1;
    p.bucket_start_s[next] = thread;
    thread += bucket_seconds(plan.buckets[next].count, model);
    p.bucket_end_s[next] = thread;
    p.communication_s += p.bucket_end_s[next] - p.bucket_start_s[next];
  }
  p.iteration_s = std::max(profile.backward_s, thread);
  p.exposed_s = p.iteration_s - profile.backward_s;
  p.overlap = p.communication_s > 0 ? std::clamp(1 - p.exposed_s / p.communication_s, 0.0, 1.0) : 1.0;
  return p;
}

CyclePrediction predict_cycle_step(const BackwardProfile& profile, double cycle_s, double threshold_mb,
                                   StepModel& model) {
  CyclePrediction c;
  if (threshold_mb < 0) throw UsageError("--bucket-mb must not be negative");
  c.plan = empty_cycle_plan(profile.tensors, cycle_s);
  if (!(profile.backward_s / cycle_s <= kMostCycles)) {
    char why[160];
    std::snprintf(why, sizeof why, "cycles of %g ms make the %g s of backward more than %g cycles: lengthen them",
                  cycle_s * 1e3, profile.backward_s, kMostCycles);
    throw UsageError(why);
  }
  const std::vector<size_t> order = readiness_order(profile.ready_s);
  const double negotiation = cycle_negotiation_seconds(c.plan, model);
  StepPrediction& p = c.step;
  size_t taken = 0;         // of order: handed over and fused by an earlier cycle
  double thread = 0;        // when this cycle's work ends
  double anchor = 0;        // cycles fall cycle_s apart from this, the start of cycle anchor_cycle,
  size_t anchor_cycle = 0;  // the last to start late (counted from it, no rounding piles up)
  for (size_t cycle = 0; taken < order.size(); ++cycle) {
    const double begin = anchor + static_cast<double>(cycle - anchor_cycle) * cycle_s;
    // What backward had handed over when the cycle began: a prefix of the order. The tolerance
    // keeps a gradient ready a whole number of cycles in (2 ms, at 1 ms cycles) on its own cycle.
    size_t handed = taken;
    while (handed < order.size() && profile.ready_s[order[handed]] <= begin + 1e-9 * cycle_s) ++handed;
    thread = begin + negotiation;
    p.communication_s += negotiation;
    p.negotiation_s += negotiation;
    ++p.negotiations;
    const size_t first = c.plan.buckets.size();
    if (handed > taken)
      fuse_cycle(c.plan,
                 std::vector<size_t>(order.begin() + static_cast<std::ptrdiff_t>(taken),
                                     order.begin() + static_cast<std::ptrdiff_t>(handed)),
                 cycle, threshold_mb);
    for (size_t b = first; b < c.plan.buckets.size(); ++b) {
      p.bucket_start_s.push_back(thread);
      thread += bucket_seconds(c.plan.buckets[b].count, model);
      p.bucket_end_s.push_back(thread);
      p.communication_s += p.bucket_end_s.back() - p.bucket_start_s.back();
    }
    taken = handed;
    // The next cycle starts cycle_s after this one began, or when this one's work ends if later.
    if (thread > begin + cycle_s) anchor = thread, anchor_cycle = cycle + 1;
  }
  p.iteration_s = std::max(profile.backward_s, thread);
  p.exposed_s = p.iteration_s - profile.backward_s;
  p.overlap = p.communication_s > 0 ? std::clamp(1 - p.exposed_s / p.communication_s, 0.0, 1.0) : 1.0;
  return c;
}

StepPrediction predict_swept_step(const BackwardProfile& profile, BucketStrategy strategy, double bucket_mb,
                                  double cycle_s, StepModel& model, bool overlap) {
  if (strategy == BucketStrategy::cycle && overlap) return predict_cycle_step(profile, cycle_s, bucket_mb, model).step;
  return predict_step(profile, plan_buckets_swept(profile.tensors, strategy, bucket_mb), model, overlap);
}

}  // namespace sb::sim
