#pragma once
// Settings that change what a run does but that no flag carries can differ between ranks: a node
// whose shell profile sets NCCL_IB_DISABLE, a launch line that exports OMP_NUM_THREADS to some
// ranks only, an MCA parameter set in one node's openmpi-mca-params.conf. Such a run measures
// something other than what its results file says (it records rank 0's settings). Differing
// flags are refused (common/agreed_usage.hpp); differing settings are warned about and recorded,
// since a launcher may set some per rank on purpose.
//
// Compared: the variables a results file records (run_metadata.hpp: OMPI_MCA_*, NCCL_*, UCX_*,
// OMP_*), less those that differ by design: the GPU binding (CUDA_VISIBLE_DEVICES, set per task
// by srun --gpu-bind) and what Open MPI's launcher sets per process for itself (its job, rank,
// node rank, daemon URIs, working directory).
#include <map>
#include <string>
#include <vector>

#include "results/run_metadata.hpp"

namespace sb {

using Settings = std::map<std::string, std::string>;

// Whether `name` is compared over the ranks.
bool is_compared_setting(const std::string& name);

// The compared settings of `recorded` (a RunMetadata's environment).
Settings compared_settings(const Settings& recorded);

// One line per variable whose value is not the same on every rank (set on some and not others
// included), in name order: "NCCL_ALGO: Ring on ranks 0-1,3; Tree on rank 2; unset on rank 4".
// Values are grouped in the order of their lowest rank, a newline in one written as \n. Empty
// when every rank has the same.
std::vector<std::string> setting_differences(const std::vector<Settings>& by_rank);

// One line per variable that changed between two processes of one run (a checkpoint's writer and
// the process that resumed from it), in name order: "NCCL_ALGO: Ring then, Tree now",
// "OMP_NUM_THREADS: unset then, 4 now". Empty when nothing changed.
std::vector<std::string> setting_changes(const Settings& then, const Settings& now);

// "0-2,5,7-8": ascending ranks as ranges.
std::string rank_ranges(const std::vector<int>& ranks);

// Collective over MPI_COMM_WORLD: compares every rank's compared settings of its own
// metadata.environment and, on rank 0, sets metadata.environment_differences and prints each as
// "<program>: warning: the ranks' settings differ: <line>" on stderr. The ranks exchange a hash
// first; only when the hashes differ does rank 0 gather the settings themselves.
void compare_environments(RunMetadata& metadata);

}  // namespace sb
