#pragma once
// A bucket sweep's results and their `/buckets` group as results/SCHEMA.md describes it.
// sb-buckets fills them by replaying a profile against real allreduces; sb-dryrun train by
// simulating the same exchange, so that sb-report reads predicted and measured sweeps alike.
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/buckets/backward_profile.hpp"
#include "results/h5.hpp"

namespace sb {

// One bucket size of one strategy.
struct BucketRow {
  double bucket_mb = 0;
  size_t buckets = 0;
  double iteration_s = 0, exposed_s = 0, communication_s = 0, overlap = 0;
  std::vector<double> bucket_start_s, bucket_end_s;  // of one step, rank 0
  double negotiation_s = 0;  // of communication_s, the negotiations (partition's, the cycles')
  size_t negotiations = 0;   // in the step: partition's, or the cycle loop's cycles
};

// A strategy's rows under its group name (per-tensor, ddp, ddp@poll, cycle-5ms, no-overlap, fused, ...).
struct BucketSweep {
  std::string name;
  std::vector<BucketRow> rows;
  double cycle_ms = 0;  // the cycle strategy's cycle time (its group's attribute); 0: another strategy
};

// The group name of a cycle sweep: "cycle" when the run sweeps one cycle time, else "cycle-<ms>ms"
// (cycle-0.5ms, cycle-5ms); `polled` adds "@poll".
std::string cycle_sweep_name(double cycle_ms, bool one_cycle_time, bool polled);
// Any sweep's group name: cycle_sweep_name's for cycle, else the strategy's name ("@poll" added).
std::string sweep_name(BucketStrategy strategy, double cycle_ms, bool one_cycle_time, bool polled);
// A group's title in tables and plots: a cycle sweep's name without its "-<ms>ms", then its cycle
// time ("cycle-5ms@poll" -> "cycle@poll (5 ms cycles)"); any other name as it is.
std::string sweep_title(const std::string& name, double cycle_ms);

struct BucketsSettings {
  std::string model;  // the model, or profile:FILE
  double compute_scale = 1;
  std::string algo, transport;
  int iters = 1;
  std::string trace;  // the --trace file; empty: none
  // --jitter and sb-dryrun's --straggler (sim/jitter.hpp): each rank's compute per step drawn as
  // 1 + jitter_cv z, one rank's times straggler, and the mean over the steps of the slowest rank's
  // factor. Written when jitter_cv > 0 or straggler > 1.
  double jitter_cv = 0, straggler = 1, slowest_rank_factor = 1;
  bool balanced = false;  // sb-dryrun train --balance: the straggler's share cut to its speed
};

// Writes /buckets: the settings, the profile (backward_s, forward_s when known, tensor_ready_s,
// tensor_elements) and one group per sweep.
void write_buckets_results(const h5::Node& root, const BucketsSettings& settings, const BackwardProfile& profile,
                           const std::vector<BucketSweep>& sweeps);

}  // namespace sb
