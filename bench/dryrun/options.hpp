#pragma once
// sb-dryrun's command line: one subcommand (allreduce, train, validate, calibrate) and its flags.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/buckets/bucket_plan.hpp"
#include "kernels/dtype.hpp"

namespace sb {

enum class DryrunCommand { allreduce, train, validate, calibrate };

struct DryrunOptions {
  DryrunCommand command = DryrunCommand::allreduce;
  std::string machine;  // --machine FILE
  std::vector<int> ranks;
  std::string out;
  std::map<std::string, std::string> labels;

  // allreduce (and the allreduce of train)
  std::vector<std::string> impls;  // allreduce: --impl; train: --algo
  std::vector<Transport> transports = {Transport::mpi};
  uint64_t min_bytes = 64 << 10, max_bytes = 64 << 20, step_factor = 2;
  DataType type = DataType::float32;
  uint64_t segment_bytes = 256 << 10;
  int node_size = 0;  // hier; 0: the machine's level-0 group
  int torus_x = 0, torus_y = 0;

  // train
  std::string profile;        // --profile FILE: the backward (and forward) timeline
  std::string model = "resnet50";  // --model: its compute line in the machine file
  bool model_named = false;         // --model given: the machine must have its compute line
  int batch = 0;              // per-rank batch; 0: the machine's compute batch
  std::vector<BucketStrategy> strategies;
  std::vector<double> cycle_ms = {kDefaultCycleMs};  // the cycle strategy's cycle times, each swept
  double min_mb = 0.25, max_mb = 256, mb_factor = 2;
  double jitter = 0;  // --jitter: each rank's compute time per step varies by this coefficient (sim/jitter.hpp)
  double straggler = 1;  // --straggler: one rank's compute time per step over the others'
  bool balance = false;  // --balance: the straggler's share of the batch cut to its speed (sb-train --balance)

  // validate
  std::vector<std::string> inputs;
  bool print_rows = false;  // --rows: every row's measured and predicted time
  std::vector<std::string> reference;  // --reference: compare with these measurements instead of the model

  // calibrate
  std::string name;             // the machine's name
  uint64_t calibrate_max_bytes = 64 << 20;
  int repeats = 5;
  double timeout_seconds = 600;  // without a figure measured before the job ends (0: never)

  std::vector<uint64_t> sizes() const;
  std::vector<double> bucket_sizes_mb() const;
};

// Throws UsageError for bad input; nullopt after --help (printed when print is true).
std::optional<DryrunOptions> parse_dryrun_options(int argc, char** argv, bool print);

// "2,4,8" or "8..1024" (the powers of two from 8 to 1024), mixed freely: "1,8..64".
std::vector<int> parse_rank_list(const std::string& text, const std::string& what);

}  // namespace sb
