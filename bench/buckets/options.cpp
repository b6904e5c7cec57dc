#include "bench/buckets/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "common/command_line.hpp"
#include "common/distinct_files.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "models/resnet.hpp"
#include "results/run_metadata.hpp"
#include "sim/jitter.hpp"

namespace sb {

std::vector<double> BucketsOptions::bucket_sizes() const {
  return bucket_size_sweep(min_mb, max_mb, factor, "-b, -e and -f");
}

std::vector<BucketsSweep> BucketsOptions::sweeps() const {
  std::vector<BucketsSweep> sweeps;
  for (Progress p : progress)
    for (BucketStrategy strategy : strategies) {
      if (strategy != BucketStrategy::cycle) sweeps.push_back({p, strategy, 0});
      else if (p == Progress::thread)
        for (double ms : cycle_ms) sweeps.push_back({p, strategy, ms});
    }
  return sweeps;
}

std::optional<BucketsOptions> parse_buckets_options(int argc, char** argv, bool print) {
  BucketsOptions o;
  std::string strategies = "all", transport = "mpi", progress = "thread", cycle_ms = "1";
  std::vector<std::string> label_texts;
  CLI::App app("sb-buckets: gradient fusion without training. A model's gradients and the times backward produces\n"
               "them (measured here, or a profile file) are replayed against real allreduces, for each bucket\n"
               "strategy and size: iteration time, exposed communication and overlap, against no overlap and\n"
               "one fused allreduce after backward. Run it under mpirun; every rank must be given the same flags\n"
               "(the paths of --profile, --write-profile, --trace and --out, and --threads, may differ).",
               "sb-buckets");
  app.add_option("--model", o.model, "the gradient list and measured profile of this model [resnet50]");
  app.add_option("--batch", o.batch, "per-rank batch of the measured profile [32]");
  app.add_option("--image-size", o.image_size, "input size of the measured profile [224]");
  app.add_option("--profile-steps", o.profile_steps, "backward passes measured (after one warm-up) [2]");
  app.add_option("--profile", o.profile, "read the backward profile from this file instead of measuring");
  app.add_option("--write-profile", o.write_profile, "write the profile used to this file");
  app.add_option("--compute-scale", o.compute_scale, "multiply the profile's times by this (0.01: 100x faster) [1]");
  app.add_option("--strategy", strategies, "per-tensor, fixed, ddp, partition, cycle: comma-separated, or all [all]");
  app.add_option("--cycle-ms", cycle_ms,
                 "the cycle strategy's cycle times, Horovod's HOROVOD_CYCLE_TIME (its threshold is the bucket size),\n"
                 "comma-separated: each is a sweep [1, Horovod's default since 0.21]");
  app.add_option("-b,--min-mb", o.min_mb, "smallest bucket in MiB [0.25]");
  app.add_option("-e,--max-mb", o.max_mb, "largest bucket in MiB [256]");
  app.add_option("-f,--factor", o.factor, "bucket size step factor [2]");
  app.add_option("--progress", progress,
                 "thread: a communication thread runs each bucket's allreduce; poll: MPI_Iallreduce posted and\n"
                 "tested between layers (--algo mpi; not cycle, Horovod's loop is a thread); thread,poll: both,\n"
                 "compared [thread]");
  app.add_option("--algo", o.exchange.algorithm, "allreduce: mpi or a schedule (ring, rd, ...) [mpi]");
  app.add_option("--transport", transport, "a schedule's transport: mpi or shm [mpi]");
  app.add_option("--jitter", o.jitter,
                 "each rank's replayed backward of a timed step takes 1 + CV z times the profile's (z normal, drawn\n"
                 "per rank and step, the same draws for every configuration): what sb-dryrun train --jitter prices,\n"
                 "0 to 0.25 [0]");
  app.add_option("--straggler", o.straggler,
                 "the last rank (of 2 or more) replays its backward S times slower at every step: what sb-dryrun\n"
                 "train --straggler prices, 1 to 10 [1]");
  app.add_option("-n,--iters", o.iters, "timed steps per configuration (median of the slowest rank) [3]");
  app.add_option("-w,--warmup_iters", o.warmup_iters, "untimed steps first [1]");
  app.add_option("--threads", o.threads, "compute threads of the measured profile [OMP_NUM_THREADS or all cores]");
  app.add_option("-T,--timeout", o.timeout_seconds,
                 "seconds without progress (rank 0 measuring the profile counts as one stretch) before the job\n"
                 "ends, saving the rows measured; 0: never [600]");
  app.add_option("--out", o.out, "results file [out/buckets-<UTC time>-<pid>.h5]");
  app.add_option("--trace", o.trace,
                 "write a Chrome trace (ui.perfetto.dev, chrome://tracing) of every rank's replayed backward,\n"
                 "gradient hand-overs and bucket reductions in each configuration's reported (median) step");
  app.add_option("--label", label_texts, "key=value tag recorded in the results (repeatable)");
  if (!parse_command_line(app, argc, argv, print)) return std::nullopt;
  // Rank 0 alone reads --profile and writes the files: their paths may differ between nodes.
  o.flags = flags_to_agree(app, {"--out", "--label", "--threads", "--profile", "--write-profile", "--trace"});
  models::make_resnet_config(o.model, 3, 1000, o.image_size, 0);  // unknown model: UsageError
  if (o.batch < 1 || o.image_size < 8 || o.profile_steps < 1) throw UsageError("--batch, --image-size, --profile-steps must be positive");
  if (o.compute_scale <= 0) throw UsageError("--compute-scale must be positive");
  sim::require_jitter(o.jitter);
  sim::require_straggler(o.straggler);
  require_distinct_files(
      {{"--profile", o.profile}, {"--write-profile", o.write_profile}, {"--out", o.out}, {"--trace", o.trace}});
  if (o.min_mb <= 0 || o.max_mb < o.min_mb || o.factor <= 1) throw UsageError("bucket sizes need 0 < min <= max and factor > 1");
  o.bucket_sizes();  // too many: UsageError
  if (o.iters < 1 || o.warmup_iters < 0) throw UsageError("--iters must be at least 1 and --warmup_iters at least 0");
  if (o.timeout_seconds < 0) throw UsageError("--timeout must not be negative");
  if (o.threads < 0) throw UsageError("--threads must not be negative (0: OMP_NUM_THREADS or all cores)");
  if (transport == "mpi") o.exchange.impl.transport = Transport::mpi;
  else if (transport == "shm") o.exchange.impl.transport = Transport::shm;
  else throw UsageError("--transport must be mpi or shm, not '" + transport + "'");
  const AllreduceImplInfo* algo = find_allreduce_impl(o.exchange.algorithm);
  if (!algo || algo->memory == Memory::device) throw UsageError("unknown or device-only --algo '" + o.exchange.algorithm + "'");
  o.strategies = parse_bucket_strategies(strategies);
  o.cycle_ms = parse_cycle_times(cycle_ms);
  for (const std::string& name : split_list(progress)) o.progress.push_back(parse_progress(name));
  if (std::find(o.progress.begin(), o.progress.end(), Progress::poll) != o.progress.end() && o.exchange.algorithm != "mpi")
    throw UsageError("--progress poll posts MPI_Iallreduce: it needs --algo mpi");
  if (o.sweeps().empty())
    throw UsageError("--progress poll: the cycle strategy is Horovod's loop, a thread of its own: it has no polled sweep");
  for (const std::string& label : label_texts) add_label(o.labels, label);
  return o;
}

}  // namespace sb
