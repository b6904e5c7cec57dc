#pragma once
// sb-train's command line.
#include <map>
#include <optional>
#include <string>

#include "models/trainer.hpp"

namespace sb {

struct TrainOptions {
  models::TrainConfig config;
  std::string out;  // empty: out/train-<UTC time>-<pid>.h5
  std::string flags;  // what every rank must be given alike (common/command_line.hpp's flags_to_agree)
  std::map<std::string, std::string> labels;
  double timeout_seconds = 600;  // without a finished step or evaluation before the job ends
};

// --workers auto: the loader threads for a rank of `backend` that may run on `cores` cores. On the
// host the compute threads take the cores, and two workers keep up with them; a GPU's rank
// computes on the device, so its loader takes every core but the training thread's (at least 2,
// at most kMostAutoWorkers): ResNet-50's 2,500 img/s and more need many JPEG decoders.
inline constexpr int kMostAutoWorkers = 16;
int auto_loader_workers(const std::string& backend, int cores);

// Throws UsageError for bad input; nullopt after --help.
std::optional<TrainOptions> parse_train_options(int argc, char** argv, bool print);
// Throws UsageError when a file that rank 0 alone writes (--trace, --mllog) cannot be written
// there. Checked on rank 0 only: on a cluster another node may lack that folder.
void check_rank0_outputs(const TrainOptions& options);

}  // namespace sb
