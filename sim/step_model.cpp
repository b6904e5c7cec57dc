#include "sim/step_model.hpp"

#include <algorithm>

namespace sb::sim {
namespace {

// When each bucket's last piece is ready.
std::vector<double> bucket_ready_s(const BackwardProfile& profile, const BucketPlan& plan) {
  std::vector<double> ready(plan.buckets.size(), 0.0);
  for (size_t b = 0; b < plan.buckets.size(); ++b)
    for (const BucketPiece& piece : plan.buckets[b].pieces) ready[b] = std::max(ready[b], profile.ready_s[piece.tensor]);
  return ready;
}

}  // namespace

StepPrediction predict_step(const BackwardProfile& profile, const BucketPlan& plan, StepModel& model, bool overlap) {
  const size_t n = plan.buckets.size();
  StepPrediction p;
  p.bucket_start_s.assign(n, 0.0);
  p.bucket_end_s.assign(n, 0.0);
  std::vector<double> ready = bucket_ready_s(profile, plan);
  if (!overlap) std::fill(ready.begin(), ready.end(), profile.backward_s);
  const bool negotiate = plan.strategy == BucketStrategy::partition && model.nranks > 1;
  // The cost of one bucket on the thread: pack, allreduce in place, unpack scaled.
  auto cost = [&](size_t b) {
    const double bytes = static_cast<double>(plan.buckets[b].count) * sizeof(float);
    const double copies = model.nranks > 1 ? 2 * bytes / model.copy_rate : 0.0;
    return copies + (model.nranks > 1 ? model.allreduce.seconds(plan.buckets[b].count) : 0.0);
  };
  const double negotiation = negotiate ? model.flags.seconds((n + 3) / 4) : 0.0;

  // cycle: Horovod's loop, as GradientExchange runs it, one cycle per tick, each starting at its
  // tick or when the last one ended and negotiating (an allreduce of a bit per tensor) before it
  // reduces its tick's buckets.
  const bool cycles = plan.strategy == BucketStrategy::cycle && overlap;
  const double cycle_negotiation =
      cycles && model.nranks > 1 ? model.flags.seconds(negotiation_words(plan) * sizeof(uint64_t) / sizeof(float)) : 0.0;
  size_t ticks_done = 0;

  std::vector<char> done(n, 0);
  double thread = 0;  // when the communication thread is next free
  for (size_t taken = 0; taken < n; ++taken) {
    size_t next = n;
    if (cycles) {
      next = taken;  // the plan's order, tick by tick; every tick up to this bucket's a cycle
      for (; ticks_done <= plan.buckets[next].tick; ++ticks_done) {
        thread = std::max(thread, static_cast<double>(ticks_done) * plan.cycle_s) + cycle_negotiation;
        p.communication_s += cycle_negotiation;
        p.negotiation_s += cycle_negotiation;
      }
      thread = std::max(thread, ready[next]);
    } else if (!negotiate) {
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
      for (size_t b = 0; b < n; ++b)
        if (!done[b] && ready[b] <= thread && (next == n || plan.buckets[b].priority < plan.buckets[next].priority))
          next = b;
    }
    done[next] = 1;
    p.bucket_start_s[next] = thread;
    thread += cost(next);
    p.bucket_end_s[next] = thread;
    p.communication_s += p.bucket_end_s[next] - p.bucket_start_s[next];
  }
  p.iteration_s = std::max(profile.backward_s, thread);
  p.exposed_s = p.iteration_s - profile.backward_s;
  p.overlap = p.communication_s > 0 ? std::clamp(1 - p.exposed_s / p.communication_s, 0.0, 1.0) : 1.0;
  return p;
}

}  // namespace sb::sim
