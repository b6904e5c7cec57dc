#pragma once
// sb-dryrun's subcommands, one file each. `metadata` describes this process's run (command line,
// start time, versions); each returns the exit status.
#include "bench/dryrun/options.hpp"
#include "results/run_metadata.hpp"

namespace sb {

int predict_allreduce_sweeps(const DryrunOptions& options, const RunMetadata& metadata);
int predict_training_steps(const DryrunOptions& options, const RunMetadata& metadata);
int validate_campaign(const DryrunOptions& options, const RunMetadata& metadata);
int calibrate_machine(const DryrunOptions& options, const RunMetadata& metadata);

}  // namespace sb
