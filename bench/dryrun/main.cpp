// sb-dryrun: the simulator's front end. `calibrate` measures this machine under mpirun and writes a
// machine description; `allreduce` and `train` predict sb-allreduce sweeps and sb-buckets training
// steps on a description, at any scale, writing the programs' own results files (simulated = 1);
// `validate` re-predicts a campaign's measured runs and reports the error of each. Only calibrate
// uses MPI; the rest run anywhere, a login node included.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/dryrun/commands.hpp"
#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/mpi_env.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"

namespace {

constexpr const char* kProgram = "sb-dryrun";

// Under a launcher every rank parses the command line before MPI is up: only the first prints.
bool first_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name)) return std::string(value) == "0";
  return true;
}

// Whether a launcher started this process as one of several ranks (srun sets
// SLURM_STEP_NUM_TASKS in a step only, not in the batch script itself).
bool one_of_several_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* value = std::getenv(name)) return std::atoi(value) > 1;
  return false;
}

// Bad input, found by every rank alike. When launched as several ranks, the others wait for the
// first to write the line: a launcher that ends the job when one rank exits non-zero (Open MPI
// under -mca odls_base_sigkill_timeout 0, Slurm's --kill-on-bad-exit) would otherwise kill the
// first rank, maybe not yet started, before its line is out, and leave an exit status 2 unexplained.
int refuse_input(int argc, char** argv, bool print, const char* what) {
  if (print) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, what);
    std::fflush(stderr);
  }
  if (one_of_several_ranks()) {
    sb::MpiSession mpi(&argc, &argv);
    SB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  }
  return sb::kExitUsage;
}

int run(int argc, char** argv) {
  const bool print = first_rank();
  std::optional<sb::DryrunOptions> options;
  try {
    options = sb::parse_dryrun_options(argc, argv, print);
  } catch (const sb::UsageError& e) {
    return refuse_input(argc, argv, print, e.what());
  }
  if (!options) return 0;
  const sb::RunMetadata metadata = sb::describe_run(kProgram, argc, argv);
  switch (options->command) {
    case sb::DryrunCommand::allreduce: return sb::predict_allreduce_sweeps(*options, metadata);
    case sb::DryrunCommand::train: return sb::predict_training_steps(*options, metadata);
    case sb::DryrunCommand::validate: return sb::validate_campaign(*options, metadata);
    case sb::DryrunCommand::calibrate: {
      sb::block_termination_signals();  // before MPI's threads start: SIGINT/SIGTERM go to the watchdog
      sb::MpiSession mpi(&argc, &argv);
      return sb::calibrate_machine(*options, metadata);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-dryrun");
  try {
    return run(argc, argv);
  } catch (const sb::UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return sb::kExitUsage;
  } catch (const sb::LibraryError& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return sb::kExitFault;
  }
}
