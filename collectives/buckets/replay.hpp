#pragma once
// Replays a backward pass's timeline against a gradient exchange (a GradientExchange's plan, or
// Horovod's live loop, CycleExchange): each gradient is reported ready at its time in the profile
// (the thread sleeps in between, as a GPU's backward leaves the cores free), then the step waits
// for the exchange. What is left after backward ends is the exposed, non-overlapped communication.
#include <mpi.h>

#include <vector>

#include "collectives/buckets/backward_profile.hpp"
#include "collectives/buckets/bucket_plan.hpp"
#include "collectives/buckets/gradient_averager.hpp"

namespace sb {

struct ReplayResult {
  double iteration_s = 0;      // backward start to every gradient averaged
  double exposed_s = 0;        // iteration_s - backward_s: communication not hidden
  double communication_s = 0;  // time inside the allreduces (negotiations included)
  double negotiation_s = 0;    // of communication_s, the negotiations
  size_t negotiations = 0;     // partition's, or the cycle loop's, one a cycle
  double overlap = 0;          // 1 - exposed / communication, in [0, 1]
  std::vector<double> bucket_start_s, bucket_end_s;  // per bucket, after backward start
  double start_wtime = 0;       // backward's start, in MPI_Wtime seconds
  std::vector<double> ready_s;  // per tensor (model order): when it was handed over, after start
  BucketPlan plan;  // the buckets this step reduced (a live cycle loop's differ from step to step)
};

// One step; starts with a barrier on comm so that all ranks replay from the same moment.
ReplayResult replay_step(GradientAverager& exchange, const BackwardProfile& profile, MPI_Comm comm);

}  // namespace sb
