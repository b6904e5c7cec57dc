#pragma once
// What a training loop needs from a gradient exchange, whatever carries it: the host one
// (gradient_exchange.hpp: MPI or the schedules, fp32 host buffers, a communication thread) or the
// device one (models/device_gradient_exchange.hpp: NCCL on a communication stream).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectives/buckets/bucket_plan.hpp"

namespace sb {

// One named fp32 array of an exchange's carried state (GradientAverager::carried_state): named
// "bucket<b>.residual" (error feedback) or "bucket<b>.warm_start" (a compressor's own).
using NamedFloats = std::pair<std::string, std::vector<float>>;
inline std::string carried_name(size_t bucket, const char* what) {
  return "bucket" + std::to_string(bucket) + "." + what;
}

// What one step's exchange cost, as seen from this rank.
struct ExchangeTimes {
  double communication_s = 0;  // inside allreduces (packing included); polled: while any bucket was in flight
  double wait_s = 0;           // communication not hidden by backward: the caller waited for it
  // Of communication_s, the negotiations that agree what is ready on every rank (partition's, and
  // the cycle strategy's once a cycle), and how many there were; 0 for the other strategies.
  double negotiation_s = 0;
  size_t negotiations = 0;
};

class GradientAverager {
 public:
  virtual ~GradientAverager() = default;
  // Marks the start of a step's backward pass.
  virtual void begin_step() = 0;
  // Tensor k's gradient is final for this step (called by backward, in the same order on every rank).
  virtual void tensor_ready(size_t tensor) = 0;
  // Every bucket is reduced and averaged back into the gradients when the caller next uses them.
  virtual ExchangeTimes finish() = 0;
  // This rank's gradients count `weight` times in the average (default 1); set between steps.
  virtual void set_weight(float weight) = 0;
  virtual const BucketPlan& plan() const = 0;
  // Each bucket's reduction in the last step, (start, end) in MPI_Wtime seconds, by bucket (a
  // polled bucket's end: when a test found it complete); empty where the host does not see them
  // (the device exchange's run on a stream).
  virtual std::vector<std::pair<double, double>> bucket_spans() const { return {}; }

  // What the exchange carries from one step to the next on this rank: error feedback's residuals
  // and compressors' warm starts, per bucket, named; empty without either. Checkpoints keep it,
  // with the step count, so that a resumed run goes on as if it had not stopped.
  virtual std::vector<NamedFloats> carried_state() const { return {}; }
  // Takes back what carried_state() gave (same plan, compressor and ranks); throws
  // std::invalid_argument naming what does not fit.
  virtual void restore_carried_state(const std::vector<NamedFloats>& /*state*/) {}
  // The steps before this run (a resumed run's first step): random choices (random-k's indices,
  // stochastic rounding) follow the step, so it must go on from where the checkpoint stopped.
  virtual void set_step(uint64_t steps_done) = 0;

  // A step recorded as a CUDA graph (device exchanges; sb-train --cuda-graph). While recording,
  // queue_rest() queues what finish() would queue before waiting, so that the recording holds the
  // whole exchange; a step that replays the recording calls replayed() instead of tensor_ready()
  // between begin_step() and finish(). Either way, finish() then only waits and times the step.
  virtual void queue_rest() { throw std::logic_error("this gradient exchange cannot be recorded"); }
  virtual void replayed() { throw std::logic_error("this gradient exchange cannot be recorded"); }
};

}  // namespace sb
