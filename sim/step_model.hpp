#pragma once
// A training step's gradient exchange, simulated as GradientExchange runs it: backward produces
// each gradient at its time in the profile; one communication thread takes the buckets one at a
// time, each as soon as its last piece is ready (in backward's completion order; partition: the
// most urgent bucket ready, after a small allreduce of readiness flags, as the exchange
// negotiates; cycle: a cycle of Horovod's loop per tick, each negotiating, then reducing its
// tick's buckets), packs it, allreduces it and unpacks it scaled. Or, without overlap, the same
// allreduces after backward ends.
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
  double overlap = 0;          // 1 - exposed / communication, in [0, 1]
  std::vector<double> bucket_start_s, bucket_end_s;  // by bucket
};

// What the exchange costs at one scale, priced on a machine and cached by size: the buckets'
// allreduce (`buckets`, its nranks the scale), partition's and cycle's negotiations (MPI_Allreduce
// of a byte per bucket, of a bit per tensor) and packing at the machine's copy rate.
struct StepModel {
  StepModel(const Machine& machine, const AllreduceCase& buckets)
      : allreduce(machine, buckets), flags(machine, as_mpi(buckets)), copy_rate(machine.copy), nranks(buckets.nranks) {}

  AllreduceTimes allreduce, flags;
  double copy_rate = 0;  // bytes/s
  int nranks = 1;

 private:
  static AllreduceCase as_mpi(AllreduceCase c) {
    c.impl = "mpi";
    return c;
  }
};

StepPrediction predict_step(const BackwardProfile& profile, const BucketPlan& plan, StepModel& model, bool overlap);

}  // namespace sb::sim
