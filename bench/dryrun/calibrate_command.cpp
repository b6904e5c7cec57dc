// sb-dryrun calibrate: measures this machine (sim/calibrate.hpp) under mpirun and writes its
// description, with the measurements it came from as `source` lines. The file is written under
// a temporary name and renamed, so a failed run leaves no half-written description.

#include <cstdio>
#include <filesystem>

#include "bench/dryrun/commands.hpp"
#include "common/atomic_file.hpp"
#include "common/check.hpp"
#include "common/mpi_env.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"
#include "results/environment_agreement.hpp"
#include "sim/calibrate.hpp"

namespace sb {
namespace {

// Ranks other than 0 wait this much longer before giving up, so that rank 0 reports first.
constexpr double kTimeoutGraceSeconds = 5;

}  // namespace

int calibrate_machine(const DryrunOptions& o, const RunMetadata& metadata) {
  const WorldLayout layout = discover_world_layout();
  const bool root = layout.rank == 0;
  std::string name = o.name.empty() ? layout.hosts.front() : o.name;
  for (char& c : name)
    if (c == ' ' || c == '#') c = '-';
  const std::string out = o.out.empty() ? "out/" + name + ".machine" : o.out;
  // Every rank agrees on bad input before any collective measurement.
  std::string problem;
  if (layout.nranks < 2) problem = "calibrate needs 2 or more ranks (mpirun -np 2 sb-dryrun calibrate ...)";
  else if (layout.hosts[1] != layout.hosts[0]) problem = "calibrate needs ranks 0 and 1 on one node (fill nodes in rank order)";
  if (problem.empty() && root) {
    if (o.out.empty()) std::filesystem::create_directories("out");
    problem = why_not_writable(out);
  }
  int failed = problem.empty() ? 0 : 1, any = 0;
  SB_MPI_CHECK(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (any) {
    if (root) std::fprintf(stderr, "sb-dryrun: error: %s\n", problem.empty() ? "a rank refused the input" : problem.c_str());
    return kExitUsage;
  }

  // Ranks under other settings (an MCA parameter on one node only) measure another machine: said
  // on stderr and in the description's sources, which every prediction from it carries.
  RunMetadata compared = metadata;
  compare_environments(compared);

  sim::CalibrationSettings settings{name, o.calibrate_max_bytes, o.repeats};
  std::vector<std::string> log;
  // A stuck or lost rank ends the job after --timeout seconds without a figure measured (no
  // description is written: half a machine would predict nothing).
  Watchdog watchdog(o.timeout_seconds, root ? 0 : kTimeoutGraceSeconds, Watchdog::FaultHandler());
  watchdog.phase("measuring the first figure");
  sim::Machine machine = sim::calibrate(settings, MPI_COMM_WORLD, log, [&](const std::string& figure) {
    watchdog.phase("measuring the next figure (the last one: " + figure + ")");
  });
  if (!root) return 0;
  machine.sources.push_back("sb-dryrun calibrate, " + metadata.start_time_utc + ", " + std::to_string(layout.nranks) +
                            " ranks on " + std::to_string(layout.nodes) + " node(s) (" + layout.hosts.front() + "): " +
                            metadata.command_line);
  for (const std::string& line : compared.environment_differences)
    machine.sources.push_back("the ranks' settings differ: " + line);
  for (const std::string& line : log) {
    machine.sources.push_back(line);
    std::printf("# %s\n", line.c_str());
  }
  // A figure the reader refuses would leave a description that every later command rejects: the
  // measurement failed, and nothing is written.
  const std::string description = sim::format_machine(machine);
  try {
    sim::parse_machine(description, out);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "sb-dryrun: calibrate measured a figure no description can hold (%s); nothing written: "
                 "rerun with more --repeats, on a quieter machine\n", e.what());
    return kExitFault;
  }
  AtomicFile file(out);
  file.stream() << "# machine description measured by sb-dryrun calibrate (format: sim/README.md)\n" << description;
  file.commit();
  std::fputs(description.c_str(), stdout);
  std::printf("# written: %s\n", out.c_str());
  return 0;
}

}  // namespace sb
