#pragma once
// What a training loop needs from a gradient exchange, whatever carries it: the host one
// (gradient_exchange.hpp: MPI or the schedules, fp32 host buffers, a communication thread) or the
// device one (models/device_gradient_exchange.hpp: NCCL on a communication stream).
#include <cstddef>

#include "collectives/buckets/bucket_plan.hpp"

namespace sb {

// What one step's exchange cost, as seen from this rank.
struct ExchangeTimes {
  double communication_s = 0;  // inside allreduces (packing included); polled: while any bucket was in flight
  double wait_s = 0;           // communication not hidden by backward: the caller waited for it
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
};

}  // namespace sb
