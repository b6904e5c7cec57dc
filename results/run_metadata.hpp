#pragma once
// What every results file says about the run that made it, on its root group: which program and
// build, when, on what (ranks, nodes, hosts, devices, library versions, Slurm allocation) and the
// user's own --label tags. See results/SCHEMA.md for the attribute names.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/mpi_env.hpp"
#include "results/h5.hpp"

namespace sb {

struct RunMetadata {
  std::string program;
  std::string command_line;
  std::string start_time_utc;
  std::string run_id;  // new_run_id(): the same run in several files (a merged copy) is counted once
  WorldLayout layout;
  std::vector<std::string> devices;  // per rank; empty when the run uses no device
  std::vector<std::pair<std::string, std::string>> libraries;  // name, version
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> environment;  // rank 0's MCA / NCCL / UCX / OpenMP settings
  // Which of them differ between ranks (environment_agreement.hpp), one line each; rank 0 only.
  std::vector<std::string> environment_differences;
};

// Everything that needs no communication; the caller fills in layout and devices.
RunMetadata describe_run(std::string program, int argc, char** argv);

// This process's settings that a results file records (`environment`): its MCA, NCCL, UCX and
// OpenMP variables.
std::map<std::string, std::string> recorded_environment();

// "key=value" -> labels[key] = value. Throws UsageError for anything else.
void add_label(std::map<std::string, std::string>& labels, const std::string& text);

// 32 random hexadecimal digits, naming one run: a run's file, its snapshots and every merged copy
// of it carry the same, and no two runs share one (start times and command lines may).
std::string new_run_id();

// The current UTC time as ISO 8601, e.g. 2026-12-02T16:04:50Z.
std::string utc_now();

// Where a run's results go without --out: out/<kind>-<UTC time>-<pid>.h5 (creates out/).
std::string default_results_path(const std::string& kind);

// The build's version and git commit (from the Makefile).
std::string scalebench_version();
std::string scalebench_git_commit();

void write_run_metadata(const h5::Node& root, const RunMetadata& metadata);

// How the run ended, written last: end_time_utc (now) and status ("complete", or why it ended early).
void write_run_end(const h5::Node& root, const std::string& status);

}  // namespace sb
