#pragma once
// A training step's gradient exchange, simulated as GradientExchange runs it: backward produces
// each gradient at its time in the profile; one communication thread takes the buckets one at a
// time, each as soon as its last piece is ready (in backward's completion order; partition: the
// most urgent bucket ready, after a small allreduce of readiness flags, as the exchange
// negotiates), packs it, allreduces it and unpacks it scaled. Or, without overlap, the same
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
  double communication_s = 0;  // inside the allreduces, packing included
  double overlap = 0;          // 1 - exposed / communication, in [0, 1]
  std::vector<double> bucket_start_s, bucket_end_s;  // by bucket
};

struct StepModel {
  AllreduceTimes* allreduce = nullptr;  // the buckets' allreduce at this scale
  AllreduceTimes* flags = nullptr;      // the readiness negotiation of partition (MPI_Allreduce of bytes)
  double copy_rate = 0;                 // bytes/s of packing and unpacking
  int nranks = 1;
};

StepPrediction predict_step(const BackwardProfile& profile, const BucketPlan& plan, const StepModel& model, bool overlap);

}  // namespace sb::sim
