#pragma once
// An allreduce size sweep's results, and their `/allreduce` group as results/SCHEMA.md describes
// it. sb-allreduce fills them by measuring; sb-dryrun by simulating, so that sb-report reads
// predicted and measured sweeps alike.
#include <cstdint>
#include <string>
#include <vector>

#include "results/h5.hpp"
#include "results/run_metadata.hpp"

namespace sb {

// One placement (out-of-place or in-place) at one size. Times in microseconds.
struct PlacementResult {
  double time_us = 0;  // the row's time: per-rank mean times aggregated by -a
  double rank_min_us = 0, rank_mean_us = 0, rank_max_us = 0;  // over the per-rank mean times
  double median_us = 0, p99_us = 0;  // over iterations of the slowest rank's time
  double algbw_GBps = 0, busbw_GBps = 0;
  int64_t wrong = -1;                // summed over ranks; -1 when not checked
  std::vector<double> iteration_us;  // [rank][iteration], row-major; rank 0 only
};

struct SizeResult {
  uint64_t bytes = 0;
  uint64_t count = 0;
  PlacementResult out_of_place, in_place;
};

struct ImplResult {
  std::string name;       // the implementation, and for a schedule "@transport" (ring@shm)
  std::string description;
  std::string transport;  // the schedule's transport; empty for the library baselines
  std::vector<std::string> devices;  // per rank, for device implementations
  std::vector<SizeResult> sizes;
};

// The attributes of `/allreduce`: how the sweep was run (see SCHEMA.md for each).
struct AllreduceSweepSettings {
  std::string datatype = "float", op = "sum";
  uint64_t min_bytes = 0, max_bytes = 0, step_factor = 0, step_bytes = 0;
  int iters = 0, warmup_iters = 0;
  bool check = false;
  int average = 1;
  double timeout_s = 0;
  uint64_t memcpy_bytes = 0;
  double memcpy_GBps = 0;
  std::vector<std::string> transports;
  uint64_t segment_bytes = 0;
  int node_size = 1;
  std::string torus;  // "XxY"
};

// `status` is "complete", or why the run ended early (its finished sizes are all there).
void write_allreduce_results(const h5::Node& root, const RunMetadata& metadata, const AllreduceSweepSettings& settings,
                             const std::vector<ImplResult>& impls, const std::string& status);

}  // namespace sb
