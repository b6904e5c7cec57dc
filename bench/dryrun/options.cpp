#include "bench/dryrun/options.hpp"

#include <CLI/CLI.hpp>

#include <climits>
#include <cstdio>

#include "collectives/algorithms/algorithms.hpp"
#include "common/command_line.hpp"
#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "results/run_metadata.hpp"
#include "sim/allreduce_model.hpp"
#include "sim/jitter.hpp"

namespace sb {

std::vector<uint64_t> DryrunOptions::sizes() const { return size_sweep(min_bytes, max_bytes, step_factor, 0); }

std::vector<double> DryrunOptions::bucket_sizes_mb() const {
  return bucket_size_sweep(min_mb, max_mb, mb_factor, "--min-mb, --max-mb and --mb-factor");
}

std::vector<int> parse_rank_list(const std::string& text, const std::string& what) {
  std::vector<int> ranks;
  auto number = [&](const std::string& field) {
    const auto n = parse_whole_integer(field);
    if (!n || *n < 1 || *n > (1 << 20)) throw UsageError(what + ": '" + field + "' is not a rank count from 1 to 1048576");
    return static_cast<int>(*n);
  };
  for (const std::string& field : split_list(text)) {
    const size_t dots = field.find("..");
    if (dots == std::string::npos) {
      ranks.push_back(number(field));
      continue;
    }
    const int from = number(field.substr(0, dots)), to = number(field.substr(dots + 2));
    if (to < from) throw UsageError(what + ": '" + field + "' runs backwards");
    for (long p = from; p <= to; p *= 2) ranks.push_back(static_cast<int>(p));
  }
  return ranks;
}

namespace {

void add_common(CLI::App& app, DryrunOptions& o, std::string& ranks, std::vector<std::string>& labels,
                const std::string& ranks_default) {
  app.add_option("--machine", o.machine, "machine description file (sim/README.md; examples in sim/machines/)")->required();
  app.add_option("--ranks", ranks, "rank counts: comma list, A..B for the powers of two between [" + ranks_default + "]");
  app.add_option("--label", labels, "key=value tag recorded in the results (repeatable)");
}

void add_allreduce_flags(CLI::App& app, DryrunOptions& o, std::string& transports, std::string& segment,
                         std::string& torus, std::string& type) {
  app.add_option("--transport", transports, "the schedules' transports: mpi, shm, nccl, or a comma list [mpi]");
  app.add_option("--segment", segment, "the mpi transport's message piece and tree's pipelining chunk, bytes [256K]");
  app.add_option("--node-size", o.node_size, "ranks per node for hier [the machine's first level]");
  app.add_option("--torus", torus, "grid of torus2d, XxY [X = the machine's first level when it divides the ranks]");
  app.add_option("-d,--datatype", type, "float, double, half, bfloat16, int32, int8 [float]");
}

}  // namespace

std::optional<DryrunOptions> parse_dryrun_options(int argc, char** argv, bool print) {
  DryrunOptions o;
  std::string ranks, transports = "mpi", segment, torus, type = "float", impls, strategies = "all", cycle_ms = "1";
  std::string min_text, max_text, factor_text, calibrate_max;
  std::vector<std::string> labels;
  CLI::App app("sb-dryrun: predicts allreduce and training-step times on a machine description by executing the\n"
               "same schedules on a cost model of its links (alpha, bandwidth, sharing) and reductions (gamma).\n"
               "  calibrate  measure this machine (run under mpirun) and write its description\n"
               "  allreduce  sweep sizes x implementations x rank counts (sb-allreduce's results, simulated)\n"
               "  train      a model's training step with bucketed, overlapped allreduce (sb-buckets' results)\n"
               "  validate   re-predict every measured sb-allreduce and sb-buckets run of a campaign",
               "sb-dryrun");
  app.require_subcommand(1);

  CLI::App* allreduce = app.add_subcommand("allreduce", "predict an sb-allreduce sweep at each rank count");
  add_common(*allreduce, o, ranks, labels, "2,4,8");
  add_allreduce_flags(*allreduce, o, transports, segment, torus, type);
  allreduce->add_option("--impl", impls, "mpi, nccl and schedules (ring, rd, ...), comma-separated, or all [all]");
  allreduce->add_option("-b,--minbytes", min_text, "smallest size [64K]");
  allreduce->add_option("-e,--maxbytes", max_text, "largest size [64M]");
  allreduce->add_option("-f,--stepfactor", factor_text, "size step factor [2]");
  allreduce->add_option("--out", o.out, "results folder: one allreduce-np<N>.h5 per rank count [out/dryrun-<time>]");

  CLI::App* train = app.add_subcommand("train", "predict a training step's iteration time and scaling");
  add_common(*train, o, ranks, labels, "1,8..128");
  add_allreduce_flags(*train, o, transports, segment, torus, type);
  train->add_option("--algo", impls, "the buckets' allreduce: mpi, nccl or schedules, comma-separated [ring,hier,torus2d]");
  train->add_option("--profile", o.profile, "backward (and forward) profile of one rank (sb-buckets --write-profile)")->required();
  train->add_option("--model", o.model, "the machine's compute line that sets the step's compute time [resnet50]");
  train->add_option("--batch", o.batch, "per-rank batch [the compute line's]");
  train->add_option("--strategy", strategies, "per-tensor, fixed, ddp, partition, cycle: comma-separated, or all [all]");
  train->add_option("--cycle-ms", cycle_ms,
                    "the cycle strategy's cycle times, Horovod's HOROVOD_CYCLE_TIME: comma-separated, a sweep each [1]");
  train->add_option("--min-mb", o.min_mb, "smallest bucket, MiB [0.25]");
  train->add_option("--max-mb", o.max_mb, "largest bucket, MiB [256]");
  train->add_option("--mb-factor", o.mb_factor, "bucket size step factor [2]");
  train->add_option("--jitter", o.jitter,
                    "each rank's compute time per step varies as 1 + CV z (z normal): the step waits for the slowest, "
                    "0 to 0.25 [0]");
  train->add_option("--straggler", o.straggler,
                    "one rank (of 2 or more) computes S times the others' time at every step, 1 to 10 [1]");
  train->add_flag("--balance", o.balance,
                  "with --straggler: each rank's share of the batch in proportion to its speed, as sb-train --balance");
  train->add_option("--out", o.out, "results folder: one buckets-np<N>-<algo>.h5 per scale and allreduce [out/dryrun-<time>]");

  CLI::App* validate = app.add_subcommand("validate", "re-predict the measured runs of a campaign and report the error");
  validate->add_option("--machine", o.machine, "machine description (from sb-dryrun calibrate)")->required();
  validate->add_option("inputs", o.inputs, "results files or campaign folders")->required();
  validate->add_option("--out", o.out, "results file of the comparison [out/validate-<time>-<pid>.h5]");
  validate->add_flag("--rows", o.print_rows, "print every row's measured and predicted time too");
  validate->add_option("--reference", o.reference,
                       "instead of predicting, compare with the same rows measured again here (the noise floor)");
  validate->add_option("--label", labels, "key=value tag recorded in the results (repeatable)");

  CLI::App* calibrate = app.add_subcommand("calibrate", "measure alpha, bandwidth and gamma here (under mpirun, 2+ ranks)");
  calibrate->add_option("--out", o.out, "machine file to write [out/<name>.machine]");
  calibrate->add_option("--name", o.name, "the machine's name [the host name]");
  calibrate->add_option("--max-bytes", calibrate_max, "largest message of the sweeps, 4K to 1G; above the cache [64M]");
  calibrate->add_option("--repeats", o.repeats, "timed repetitions per size (median) [5]");
  calibrate->add_option("-T,--timeout", o.timeout_seconds,
                        "seconds without a figure measured before the job ends (a stuck or lost rank); 0: never [600]");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (print) {
      const auto chosen = app.get_subcommands();
      std::fputs((chosen.empty() ? app.help() : chosen.front()->help()).c_str(), stdout);
    }
    return std::nullopt;
  } catch (const CLI::ParseError& error) {
    throw usage_error_of(app, error);
  }
  require_meant_numbers(app);

  const bool is_train = train->parsed();
  o.model_named = train->count("--model") > 0;
  if (allreduce->parsed()) o.command = DryrunCommand::allreduce;
  if (is_train) o.command = DryrunCommand::train;
  if (validate->parsed()) o.command = DryrunCommand::validate;
  if (calibrate->parsed()) o.command = DryrunCommand::calibrate;

  o.ranks = parse_rank_list(ranks.empty() ? (is_train ? "1,8..128" : "2,4,8") : ranks, "--ranks");
  o.transports = parse_transports(transports);
  if (!segment.empty()) o.segment_bytes = parse_size(segment, "--segment");
  if (o.segment_bytes == 0) throw UsageError("--segment must be at least 1 byte");
  if (!torus.empty()) {
    const TorusShape shape = parse_torus(torus);
    o.torus_x = shape.x;
    o.torus_y = shape.y;
  }
  if (o.node_size < 0) throw UsageError("--node-size must be positive");
  o.type = parse_datatype(type);
  if (!min_text.empty()) o.min_bytes = parse_size(min_text, "--minbytes");
  if (!max_text.empty()) o.max_bytes = parse_size(max_text, "--maxbytes");
  if (!factor_text.empty()) o.step_factor = parse_size(factor_text, "--stepfactor");
  if (o.step_factor < 2) throw UsageError("--stepfactor must be at least 2");
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes) throw UsageError("sizes: need 0 < --minbytes <= --maxbytes");
  // What sb-allreduce can measure (MPI counts elements in int); the simulator prices every pipelined
  // segment, and 2^63 bytes had run until killed.
  if (o.max_bytes / size_of(o.type) > static_cast<uint64_t>(INT_MAX))
    throw UsageError("--maxbytes " + format_size(o.max_bytes) + " is more than 2^31-1 elements, more than sb-allreduce measures");

  if (impls.empty()) impls = is_train ? "ring,hier,torus2d" : "all";
  if (impls == "all") {
    o.impls = {"mpi", "nccl"};
    for (const AllreduceAlgorithm& a : allreduce_algorithms()) o.impls.emplace_back(a.name);
  } else {
    o.impls = split_list(impls);
  }
  for (const std::string& impl : o.impls)
    if (!sim::is_known_allreduce(impl))
      throw UsageError((is_train ? "--algo" : "--impl") + std::string(": unknown allreduce '") + impl + "'");

  o.strategies = parse_bucket_strategies(strategies);
  o.cycle_ms = parse_cycle_times(cycle_ms);
  if (!(o.min_mb > 0) || o.max_mb < o.min_mb || !(o.mb_factor > 1))
    throw UsageError("buckets: need 0 < --min-mb <= --max-mb and --mb-factor > 1");
  o.bucket_sizes_mb();  // too many: UsageError
  if (o.batch < 0) throw UsageError("--batch must be positive");
  sim::require_jitter(o.jitter);
  sim::require_straggler(o.straggler);
  if (o.balance && !(o.straggler > 1)) throw UsageError("--balance shares the batch around a straggler: give --straggler");
  if (!calibrate_max.empty()) o.calibrate_max_bytes = parse_size(calibrate_max, "--max-bytes");
  // Its ping-pong sends the largest size in one message, which MPI counts in int: 8G had failed
  // in MPI_Send (exit 3), 2^63 had thrown bad_alloc past main.
  if (o.calibrate_max_bytes < 4096 || o.calibrate_max_bytes > (uint64_t{1} << 30))
    throw UsageError("--max-bytes must be from 4K to 1G");
  if (o.repeats < 1) throw UsageError("--repeats must be at least 1");
  if (o.timeout_seconds < 0) throw UsageError("--timeout must not be negative");
  for (const std::string& label : labels) add_label(o.labels, label);
  return o;
}

}  // namespace sb
