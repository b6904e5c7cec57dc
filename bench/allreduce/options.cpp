#include "bench/allreduce/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <ranges>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/allreduce_impl.hpp"
#include "common/command_line.hpp"
#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {

std::string known_impls() {
  return join_list(allreduce_impls() | std::views::transform(&AllreduceImplInfo::name)) + ", all";
}

void parse_impls(AllreduceOptions& options, const std::string& text) {
  options.impls.clear();
  for (const std::string& name : split_list(text)) {
    if (name == "all") {
      options.impls_from_all = true;
      for (const AllreduceImplInfo& info : allreduce_impls()) options.impls.emplace_back(info.name);
    } else if (find_allreduce_impl(name)) {
      options.impls.push_back(name);
    } else {
      throw UsageError("--impl: unknown implementation '" + name + "' (" + known_impls() + ")");
    }
  }
  // A name given twice (e.g. "mpi,all") runs once.
  std::vector<std::string> unique;
  for (const std::string& name : options.impls)
    if (std::find(unique.begin(), unique.end(), name) == unique.end()) unique.push_back(name);
  options.impls = unique;
}

void validate(const AllreduceOptions& o) {
  const size_t element = size_of(o.type);
  if (o.min_bytes > o.max_bytes)
    throw UsageError("--minbytes " + format_size(o.min_bytes) + " is larger than --maxbytes " +
                     format_size(o.max_bytes));
  if (o.min_bytes < element)
    throw UsageError("--minbytes " + std::to_string(o.min_bytes) + " gives a zero count of " +
                     std::string(name_of(o.type)) + " (" + std::to_string(element) + " bytes each)");
  if (o.step_factor == 1) throw UsageError("--stepfactor must be at least 2");
  if (o.step_factor == 0 && o.step_bytes == 0) throw UsageError("--stepbytes must be positive");
  for (uint64_t size : o.sizes())
    if (size % element != 0)
      throw UsageError("size " + std::to_string(size) + " is not a multiple of the " +
                       std::to_string(element) + "-byte " + std::string(name_of(o.type)));
  if (o.max_bytes / element > static_cast<uint64_t>(INT_MAX))
    throw UsageError("--maxbytes " + format_size(o.max_bytes) + " is more than 2^31-1 elements");
  if (o.segment_bytes < element)
    throw UsageError("--segment " + std::to_string(o.segment_bytes) + " is smaller than one " +
                     std::string(name_of(o.type)));
  if (o.iters < 1) throw UsageError("--iters must be at least 1");
  if (o.warmup_iters < 0) throw UsageError("--warmup_iters must not be negative");
  if (o.timeout_seconds < 0) throw UsageError("--timeout must not be negative");
}

}  // namespace

std::vector<uint64_t> AllreduceOptions::sizes() const {
  return size_sweep(min_bytes, max_bytes, step_factor, step_bytes);
}

std::string_view name_of(TimeAggregate aggregate) {
  switch (aggregate) {
    case TimeAggregate::rank0: return "rank 0";
    case TimeAggregate::mean: return "mean over ranks";
    case TimeAggregate::min: return "min over ranks";
    case TimeAggregate::max: return "max over ranks";
  }
  return "?";
}

std::optional<AllreduceOptions> parse_allreduce_options(int argc, char** argv, bool print) {
  AllreduceOptions options;
  std::string min_text, max_text, step_text, factor_text, type_text = "float", op_text = "sum";
  std::string impl_text = "mpi";
  std::vector<std::string> label_texts;
  int check = 1, average = 1;

  CLI::App app("sb-allreduce: allreduce latency and bandwidth, nccl-tests style, checked on "
               "every element.\nRun it under mpirun or srun; every rank must be given the same "
               "flags.",
               "sb-allreduce");
  app.option_defaults()->always_capture_default();
  app.add_option("-b,--minbytes", min_text, "smallest size in bytes (K/M/G suffixes) [32M]");
  app.add_option("-e,--maxbytes", max_text, "largest size in bytes [32M]");
  app.add_option("-i,--stepbytes", step_text, "grow sizes by this many bytes [1M]");
  app.add_option("-f,--stepfactor", factor_text, "grow sizes by this factor (wins over -i)");
  app.add_option("-n,--iters", options.iters, "timed iterations per size");
  app.add_option("-w,--warmup_iters", options.warmup_iters, "untimed iterations before them");
  app.add_option("-c,--check", check, "check every element of the result (0: off)");
  app.add_option("-d,--datatype", type_text, "float, double, half, bfloat16, int32, int8");
  app.add_option("-o,--op", op_text, "sum, prod, max, min, avg");
  app.add_option("-a,--average", average,
                 "row time from the per-rank times: 0 rank 0, 1 mean, 2 min, 3 max")
      ->check(CLI::Range(0, 3));
  app.add_option("-T,--timeout", options.timeout_seconds,
                 "end the job when a rank makes no progress for this many seconds (0: never)");
  app.add_option("--impl", impl_text, "implementations to run, comma-separated (" + known_impls() + ")");
  app.add_option("--out", options.out, "results file [out/allreduce-<UTC time>-<pid>.h5]");
  app.add_option("--label", label_texts, "key=value tag recorded in the results (repeatable)");
  std::string segment_text, torus_text, transport_text = "mpi";
  app.add_option("--transport", transport_text, "how the schedules move data: mpi, shm, nccl, or a comma list (each schedule runs on each)");
  app.add_option("--node-size", options.node_size,
                 "ranks per node for hier (default: ranks that share memory)");
  app.add_option("--torus", torus_text, "grid of torus2d, XxY with X*Y = ranks [most square]");
  app.add_option("--segment", segment_text, "pipelining chunk of tree and dbtree and of the mpi transport's messages, bytes [256K]");
  app.add_flag("--print-schedule", options.print_schedule,
               "print each schedule implementation's rounds for every rank at --minbytes, then stop");
  app.add_flag("--list", options.list, "list the implementations and whether each can run here");

  if (!parse_command_line(app, argc, argv, print)) return std::nullopt;
  options.flags = flags_to_agree(app, {"--out", "--label"});

  if (!min_text.empty()) options.min_bytes = parse_size(min_text, "--minbytes");
  if (!max_text.empty()) options.max_bytes = parse_size(max_text, "--maxbytes");
  if (!step_text.empty()) options.step_bytes = parse_size(step_text, "--stepbytes");
  if (!factor_text.empty()) options.step_factor = parse_size(factor_text, "--stepfactor");
  if (!factor_text.empty() && options.step_factor == 0)
    throw UsageError("--stepfactor must be at least 2");
  if (!torus_text.empty()) {
    const TorusShape torus = parse_torus(torus_text);
    options.torus_x = torus.x;
    options.torus_y = torus.y;
  }
  options.transports = parse_transports(transport_text);
  if (options.node_size < 0) throw UsageError("--node-size must be positive");
  if (!segment_text.empty()) options.segment_bytes = parse_size(segment_text, "--segment");
  options.type = parse_datatype(type_text);
  options.op = parse_redop(op_text);
  if (check != 0 && check != 1) throw UsageError("--check must be 0 or 1");
  options.check = check == 1;
  options.aggregate = static_cast<TimeAggregate>(average);
  parse_impls(options, impl_text);
  for (const std::string& label : label_texts) add_label(options.labels, label);
  validate(options);
  return options;
}

}  // namespace sb
