#pragma once
// sb-buckets's command line.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectives/buckets/gradient_exchange.hpp"

namespace sb {

// One sweep over the bucket sizes: a strategy (with a cycle time, for cycle) under a progress mode.
struct BucketsSweep {
  Progress progress = Progress::thread;
  BucketStrategy strategy = BucketStrategy::ddp;
  double cycle_ms = 0;  // the cycle strategy's; 0 for the others
};

struct BucketsOptions {
  std::string model = "resnet50";
  int64_t batch = 32;        // per rank, for the measured profile
  int64_t image_size = 224;
  int profile_steps = 2;
  std::string profile;        // read this profile instead of measuring
  std::string write_profile;  // and/or write the one used
  double compute_scale = 1;   // multiplies the profile's times (0.01: a backward 100x faster)
  double jitter = 0;          // each rank's replayed backward per step x (1 + jitter z): sim/jitter.hpp
  double straggler = 1;       // the last rank's, x this too
  std::vector<BucketStrategy> strategies;
  std::vector<double> cycle_ms = {kDefaultCycleMs};  // the cycle strategy's cycle times, each swept
  std::vector<Progress> progress;  // how overlapped buckets progress: a thread, polled, or both
  double min_mb = 0.25, max_mb = 256, factor = 2;
  ExchangeConfig exchange;
  int iters = 3, warmup_iters = 1;
  int threads = 0;
  double timeout_seconds = 600;  // without progress (a step, a bucket size) before the job ends
  std::string out;
  std::string flags;  // what every rank must be given alike (common/command_line.hpp's flags_to_agree)
  std::string trace;  // a Chrome trace of each configuration's reported step, when given
  std::map<std::string, std::string> labels;

  std::vector<double> bucket_sizes() const;  // -b, -e, -f
  // Every progress mode by every strategy, a sweep per cycle time for cycle, in that order; none
  // for cycle polled (Horovod's loop is a thread of its own: there is no polled one).
  std::vector<BucketsSweep> sweeps() const;
};

// Throws UsageError for bad input; nullopt after --help.
std::optional<BucketsOptions> parse_buckets_options(int argc, char** argv, bool print);

}  // namespace sb
