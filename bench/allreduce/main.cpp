// sb-allreduce: allreduce latency and bandwidth over a sweep of sizes, nccl-tests style, for
// every implementation asked for, each checked on every element; one HDF5 file per run.
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "bench/allreduce/options.hpp"
#include "bench/allreduce/record.hpp"
#include "bench/allreduce/sweep.hpp"
#include "bench/allreduce/table.hpp"
#include "collectives/algorithms/algorithms.hpp"
#include "collectives/baselines/baselines.hpp"
#include "collectives/schedule_allreduce.hpp"
#include "common/agreed_usage.hpp"
#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/sizes.hpp"
#include "common/mpi_env.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"
#include "results/environment_agreement.hpp"
#include "results/program_start.hpp"
#include "results/results_file.hpp"
#include "results/save_once.hpp"
#include "results/snapshot.hpp"

namespace sb {
namespace {

constexpr const char* kProgram = "sb-allreduce";
// Ranks other than 0 wait this much longer before giving up, so that rank 0 saves first.
constexpr double kTimeoutGraceSeconds = 5;

// Writes the results file once: at the end of the run, or from the watchdog when it fails; and,
// after each finished sweep, a snapshot under the same name for a rank 0 killed outright.
class ResultsSaver {
 public:
  ResultsSaver(std::unique_ptr<ResultsFile> file, const RunMetadata& metadata,
               const AllreduceOptions& options, ResultsLog& log)
      : file_(std::move(file)), metadata_(metadata), options_(options), log_(log) {}

  void save(const std::string& status) {
    std::lock_guard<std::mutex> lock(log_.mutex);
    save_results_once(
        file_, status, [&](ResultsFile& file) { write(file, status); },
        join_clauses(snapshots_.left_on_disk(), "the tables printed so far hold the same figures"));
  }

  void plan_snapshots(size_t sweeps) { snapshots_.plan_breaks(sweeps, "sweeps"); }
  // After a finished sweep (results/snapshot.hpp).
  void snapshot(const std::string& sweep) {
    std::lock_guard<std::mutex> lock(log_.mutex);
    if (file_)
      snapshots_.save_at_break(*file_, sweep, [&](ResultsFile& file, const std::string& status) { write(file, status); });
  }

 private:
  void write(ResultsFile& file, const std::string& status) {
    write_allreduce_results(file.root(), metadata_, options_, log_.memcpy, log_.impls, status);
  }

  std::unique_ptr<ResultsFile> file_;
  const RunMetadata& metadata_;
  const AllreduceOptions& options_;
  ResultsLog& log_;
  Snapshots snapshots_{kProgram};
};

void print_impl_list(const WorldLayout& layout) {
  for (const AllreduceImplInfo& info : allreduce_impls()) {
    const std::string why = info.unavailable(layout);
    std::printf("%-12s %s%s\n", std::string(info.name).c_str(), std::string(info.description).c_str(),
                why.empty() ? "" : ("  [unavailable: " + why + "]").c_str());
  }
}

// Schedules are pure functions, so rank 0 can build every rank's.
ImplConfig impl_config(const AllreduceOptions& options, const WorldLayout& layout, Transport transport) {
  ImplConfig config;
  config.type = options.type;
  config.segment_bytes = options.segment_bytes;
  config.transport = transport;
  config.node_size = options.node_size > 0 ? options.node_size : layout.local_size;
  config.torus_x = options.torus_x;
  config.torus_y = options.torus_y;
  return config;
}

void print_schedules(const AllreduceOptions& options, const WorldLayout& layout) {
  const int nranks = layout.nranks;
  const size_t count = options.min_bytes / size_of(options.type);
  const AlgorithmParams params = algorithm_params(impl_config(options, layout, Transport::mpi));
  for (const std::string& name : options.impls) {
    const AllreduceAlgorithm* algorithm = find_allreduce_impl(name)->algorithm;
    if (!algorithm) {
      std::printf("# %s is a library baseline: it has no schedule to print\n", name.c_str());
      continue;
    }
    std::printf("# %s, %d ranks, %zu elements\n", name.c_str(), nranks, count);
    for (int rank = 0; rank < nranks; ++rank)
      std::fputs(to_string(algorithm->build(rank, nranks, count, params)).c_str(), stdout);
  }
}

// An implementation runs only where every rank can run it, on the datatype asked for. One asked
// for by name that cannot is bad input; one that came from --impl all is skipped with a note.
void drop_unavailable_impls(AllreduceOptions& options, const WorldLayout& layout) {
  for (auto it = options.impls.begin(); it != options.impls.end();) {
    const AllreduceImplInfo& info = *find_allreduce_impl(*it);
    std::string why = info.unavailable(layout);
    if (why.empty() && info.refuses_type) why = info.refuses_type(options.type);
    // The reason of the first rank that cannot (a node without a GPU), on every rank.
    const std::optional<std::string> reason = first_reason_against(why, MPI_COMM_WORLD);
    if (!reason) {
      ++it;
    } else if (options.impls_from_all) {
      if (layout.rank == 0) std::printf("# impl %s skipped: %s\n", it->c_str(), reason->c_str());
      it = options.impls.erase(it);
    } else {
      throw UsageError("--impl " + *it + " cannot run here: " + *reason);
    }
  }
  // The nccl transport needs what ncclAllReduce needs: one GPU per rank.
  const bool schedules = std::any_of(options.impls.begin(), options.impls.end(),
                                     [](const std::string& name) { return find_allreduce_impl(name)->algorithm; });
  const bool on_nccl = std::find(options.transports.begin(), options.transports.end(), Transport::nccl) !=
                       options.transports.end();
  if (schedules && on_nccl) {
    const std::string why = nccl_unavailable(layout);
    if (const auto reason = first_reason_against(why, MPI_COMM_WORLD))
      throw UsageError("--transport nccl cannot run here: " + *reason);
  }
}

// What one table and one results group measure: a library baseline, or a schedule on a transport.
struct RunEntry {
  const AllreduceImplInfo* info;
  std::optional<Transport> transport;  // none for the library baselines
  std::string name() const {
    return std::string(info->name) + (transport ? "@" + std::string(name_of(*transport)) : "");
  }
};

std::vector<RunEntry> run_entries(const AllreduceOptions& options) {
  std::vector<RunEntry> entries;
  for (const std::string& name : options.impls) {
    const AllreduceImplInfo* info = find_allreduce_impl(name);
    if (!info->algorithm) {
      entries.push_back({info, std::nullopt});
      continue;
    }
    for (Transport transport : options.transports) entries.push_back({info, transport});
  }
  return entries;
}

int run(int argc, char** argv, const WorldLayout& layout) {
  const bool root = layout.rank == 0;
  std::optional<AllreduceOptions> parsed;
  std::unique_ptr<ResultsFile> file;
  std::optional<std::string> error;
  try {
    parsed = parse_allreduce_options(argc, argv, root);
  } catch (const UsageError& e) {
    error = e.what();
  }
  // Flags that differ between ranks are refused before the availability checks, which are
  // collectives (ranks given different --impl lists would call them in different numbers).
  if (const std::optional<std::string> reason =
          agree_on_command_line(error, build_and_flags(parsed ? parsed->flags : "--help"), MPI_COMM_WORLD)) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", kProgram, reason->c_str());
    return kExitUsage;
  }
  try {
    if (parsed && parsed->torus_x * parsed->torus_y != 0 && parsed->torus_x * parsed->torus_y != layout.nranks)
      throw UsageError("--torus " + std::to_string(parsed->torus_x) + "x" + std::to_string(parsed->torus_y) +
                       " does not multiply to the " + std::to_string(layout.nranks) + " ranks");
    if (parsed && parsed->list) {
      if (root) print_impl_list(layout);
      parsed.reset();
    }
    if (parsed && parsed->print_schedule) {
      if (root) print_schedules(*parsed, layout);
      parsed.reset();
    }
    if (parsed) {
      drop_unavailable_impls(*parsed, layout);
      if (root) {
        if (parsed->out.empty()) {
          parsed->out = default_results_path("allreduce");
        }
        file = std::make_unique<ResultsFile>(parsed->out);
      }
    }
  } catch (const UsageError& e) {
    error = e.what();
  }
  // Rank 0 alone opens the file, so every rank must hear whether that worked; a check may also
  // fail on some ranks only, whose first reason rank 0 prints.
  if (const std::optional<std::string> reason = first_usage_error(error, MPI_COMM_WORLD)) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", kProgram, reason->c_str());
    return kExitUsage;
  }
  if (!parsed) return 0;
  const AllreduceOptions& options = *parsed;

  RunMetadata metadata = describe_run(kProgram, argc, argv);
  metadata.layout = layout;
  compare_environments(metadata);
  metadata.labels = options.labels;
  std::vector<int> pids(static_cast<size_t>(layout.nranks));
  const int pid = ::getpid();
  SB_MPI_CHECK(MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (root) print_run_header(stdout, options, layout, pids);

  ResultsLog log;
  ResultsSaver saver(std::move(file), metadata, options, log);
  Watchdog watchdog(options.timeout_seconds, root ? 0 : kTimeoutGraceSeconds,
                    root ? Watchdog::FaultHandler([&](const std::string& reason) { saver.save(reason); })
                         : Watchdog::FaultHandler());

  // The in-run ceiling for host buffers: what memcpy gets with every rank copying at once.
  watchdog.phase("measuring memcpy bandwidth");
  log.memcpy = measure_memcpy_bandwidth(std::clamp<uint64_t>(options.max_bytes, 4096, 256 << 20), 5, MPI_COMM_WORLD);
  if (root)
    std::printf("# memcpy: %.2f GB/s per rank with all %d ranks copying %s at once (median of 5)\n#\n",
                log.memcpy.GBps, layout.nranks, format_size(log.memcpy.bytes).c_str());
  const std::vector<RunEntry> entries = run_entries(options);
  saver.plan_snapshots(entries.size());
  for (const RunEntry& entry : entries) {
    const std::string name = entry.name();
    watchdog.phase("setting up " + name);
    std::unique_ptr<AllreduceImpl> impl =
        entry.info->create(MPI_COMM_WORLD, impl_config(options, layout, entry.transport.value_or(Transport::mpi)));
    ImplResult result;
    result.name = name;
    result.description = entry.info->description;
    if (entry.transport) result.transport = std::string(name_of(*entry.transport));
    if (impl->memory() == Memory::device) result.devices = gather_strings(impl->device_name(), layout.nranks);
    {
      std::lock_guard<std::mutex> lock(log.mutex);
      log.impls.push_back(result);
    }
    if (root) print_table_header(stdout, result);
    run_allreduce_sweep(*impl, options, layout, watchdog, log, [&](const SizeResult& size) {
      print_table_row(stdout, size, options);
    });
    if (root) print_table_footer(stdout, log.impls.back());
    if (root) {
      watchdog.phase("saving the results so far");
      saver.snapshot(name);
    }
  }

  watchdog.phase(root ? "writing the results" : "waiting for rank 0 to write the results");
  int64_t wrong = 0;
  if (root) print_summary(stdout, log.impls);
  if (root) {
    for (const ImplResult& impl : log.impls) wrong += total_wrong(impl);
    metadata.devices.clear();
    for (const ImplResult& impl : log.impls)
      if (!impl.devices.empty()) metadata.devices = impl.devices;
    saver.save("complete");
  }
  SB_MPI_CHECK(MPI_Bcast(&wrong, 1, MPI_INT64_T, 0, MPI_COMM_WORLD));
  if (wrong > 0) {
    if (root) std::fprintf(stderr, "%s: %lld wrong values\n", kProgram, static_cast<long long>(wrong));
    return kExitWrongResults;
  }
  return 0;
}

}  // namespace
}  // namespace sb

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-allreduce");
  sb::block_termination_signals();
  sb::MpiSession session(&argc, &argv);
  const sb::WorldLayout layout = sb::discover_world_layout();
  try {
    return sb::run(argc, argv, layout);
  } catch (const std::exception& e) {
    sb::die(__FILE__, __LINE__, std::string("sb-allreduce: ") + e.what());
  }
}
