#pragma once
// A training step's gradient exchange, simulated as the host exchanges run it: backward produces
// each gradient at its time in the profile; one communication thread takes the buckets one at a
// time, each as soon as its last piece is ready (in backward's completion order; partition: the
// most urgent bucket ready, after a small allreduce of readiness flags, as GradientExchange
// negotiates), packs it, allreduces it and unpacks it scaled. Or, without overlap, the same
// allreduces after backward ends. The cycle strategy's buckets are not planned but found, cycle by
// cycle, by Horovod's loop (CycleExchange): predict_cycle_step runs that loop on the model.
#include <cstddef>
#include <vector>

#include "collectives/buckets/backward_profile.hpp"
#include "collectives/buckets/bucket_plan.hpp"
#include "sim/allreduce_model.hpp"

namespace sb::sim {

struct StepPrediction {
  double iteration_s = 0;      // backward start to every gradient averaged
  double exposed_s = 0;        // iteration_s - backward_s
  double communication_s = 0;  // inside the allreduces, packing and negotiations included
  double negotiation_s = 0;    // of communication_s, the negotiations (partition's, the cycles')
  size_t negotiations = 0;     // partition's (more than one rank), or the cycle loop's, one a cycle
  double overlap = 0;          // 1 - exposed / communication, in [0, 1]
  std::vector<double> bucket_start_s, bucket_end_s;  // by bucket
};

// What the exchange costs at one scale, priced on a machine and cached by size: the buckets'
// allreduce (`buckets`, its nranks the scale), partition's and cycle's negotiations (MPI_Allreduce
// of a byte per bucket, of a bit per tensor) and packing at the machine's copy rate.
struct StepModel {
  StepModel(const Machine& machine, const AllreduceCase& buckets)
      : allreduce(machine, buckets), flags(machine, as_mpi(buckets)), copy_rate(machine.copy), nranks(buckets.nranks) {}
  StepModel(Machine&& machine, const AllreduceCase& buckets) = delete;  // it prices on the machine, later

  AllreduceTimes allreduce, flags;
  double copy_rate = 0;  // bytes/s
  int nranks = 1;

 private:
  static AllreduceCase as_mpi(AllreduceCase c) {
    c.impl = "mpi";
    return c;
  }
};

// A plan's step; std::invalid_argument for a cycle plan overlapped (its cycles make its buckets).
StepPrediction predict_step(const BackwardProfile& profile, const BucketPlan& plan, StepModel& model, bool overlap);

// Horovod's loop as CycleExchange runs it, overlapped: the first cycle starts with backward; each
// negotiates (an allreduce of a bit per tensor), fuses first-fit under threshold_mb the gradients
// handed over since the last, by its start, in backward's order (fuse_cycle), and reduces them one
// after the other; the next starts cycle_s after this one began, or when this one's work ends if
// later, so a loop that falls behind fuses more at once. The step ends with the cycle that finds
// the last gradient. The profile stands for every rank: what one has handed over, all have.
struct CyclePrediction {
  StepPrediction step;
  BucketPlan plan;  // the buckets the cycles fused, each with its cycle (Bucket::tick)
  size_t cycles() const { return step.negotiations; }  // up to the one that found the last gradient
};
// More cycles in a backward pass are refused (UsageError): each is priced, and cycles of
// nanoseconds would run for hours.
inline constexpr double kMostCycles = 1e6;
// UsageError for a negative threshold, or where backward would last more than kMostCycles cycles.
CyclePrediction predict_cycle_step(const BackwardProfile& profile, double cycle_s, double threshold_mb,
                                   StepModel& model);

// One row of a sweep, as sb-buckets measures it: the cycle strategy's live loop (cycle_s apart),
// any other strategy's plan at bucket_mb (plan_buckets_swept).
StepPrediction predict_swept_step(const BackwardProfile& profile, BucketStrategy strategy, double bucket_mb,
                                  double cycle_s, StepModel& model, bool overlap);

}  // namespace sb::sim
