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

int run(int argc, char** argv) {
  const bool print = first_rank();
  std::optional<sb::DryrunOptions> options;
  try {
    options = sb::parse_dryrun_options(argc, argv, print);
  } catch (const sb::UsageError& e) {
    if (print) std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return sb::kExitUsage;
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
