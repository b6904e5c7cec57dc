#pragma once
// Where a training run stands: what a checkpoint saves beside the weights, and the per-epoch curve
// that the results file reports.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sb::models {

struct EpochRecord {
  int64_t epoch = 0;        // 1-based, as MLPerf logs count them
  double wall_s = 0;        // run time since run_start at the end of the epoch (after its evaluation)
  double train_loss = 0;    // mean over the epoch's samples
  double images_per_s = 0;  // training throughput over the epoch, evaluation excluded
  bool evaluated = false;
  double top1 = 0, top5 = 0;  // fractions, when evaluated
  // Wall-clock time since the first process's run_start: wall_s plus what the resumes before the
  // epoch's end lost (the same as wall_s for a run never resumed; NaN where that is not known).
  double clock_s = 0;
};

struct TrainingState {
  int64_t epoch = 0;       // 0-based epoch in progress
  int64_t next_batch = 0;  // first batch of that epoch still to train
  int64_t step = 0;        // optimizer steps taken so far
  double epoch_loss_sum = 0;  // sum of per-sample losses so far in this epoch
  int64_t epoch_samples = 0;
  double elapsed_s = 0;    // run time before this (resumed) process started
  int64_t ranks = 1;       // how many ranks wrote it (a resume may use another count)
  double loss_scale = 0;   // fp16's dynamic loss scale (0: none), and its clean steps in a row
  int64_t loss_scale_clean_steps = 0;
  // The learning rate of the last step that updated the momentum buffers (0: none yet), from which
  // momentum correction rescales them; NaN where not known (a checkpoint from before it was kept).
  double momentum_lr = 0;
  // Wall time across resumes. elapsed_s counts the processes' own time only; a failure also costs
  // the work after the last checkpoint, noticing it, the relaunch and the start-up. The first
  // process's run_start as Unix time (0: unknown, a checkpoint from before it was kept), the
  // resumes so far, and the wall seconds that were not run time as of the last resume (all its
  // predecessors' too): the wall time since run_start is elapsed_s + resume_gap_s.
  double run_start_unix_s = 0;
  int64_t resumes = 0;
  double resume_gap_s = 0;
  // Rank 0's settings that the ranks compare (environment_agreement.hpp: MCA, NCCL, UCX, OpenMP)
  // in the process that wrote the checkpoint (none in one from before schema 24), and the changes
  // each resume found in them, "resume N: <setting_changes line>": a run resumed under other
  // settings measures partly something else, and its results file says so.
  std::optional<std::map<std::string, std::string>> settings;
  std::vector<std::string> setting_changes;
  std::vector<EpochRecord> curve;
};

}  // namespace sb::models
