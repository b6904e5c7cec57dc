// A training run's checkpoints: the running statistics averaged over ranks, the checkpoint
// itself (rank 0, with its settings) and every rank's exchange state beside it; on resume, the
// exchange's state taken back where every rank has it, and the settings that changed said.
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "models/training_run.hpp"
#include "models/checkpoint.hpp"
#include "results/environment_agreement.hpp"

namespace sb::models {

// Batch-norm running statistics drift apart on local-BN ranks; their mean is what every rank
// evaluates and checkpoints with (PyTorch DDP instead broadcasts rank 0's).
void TrainingRun::average_running_statistics() {
  if (nranks_ == 1) return;
  std::vector<float> host;
  for (Buffer* b : model_->buffers()) {
    host.resize(static_cast<size_t>(b->value.count()));
    backend_->read(b->value, host);
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, host.data(), static_cast<int>(host.size()), MPI_FLOAT, MPI_SUM, comm_));
    for (float& v : host) v /= static_cast<float>(nranks_);
    backend_->write(b->value, host);
  }
}

void TrainingRun::save() {
  // The checkpoint where the run stopped, after a --checkpoint-steps one at that very step: on disk.
  const std::array<int64_t, 3> position = {state_.epoch, state_.next_batch, state_.step};
  if (position == last_saved_position_) return;
  last_saved_position_ = position;
  const Clock::time_point start = Clock::now();
  average_running_statistics();
  const std::string path = checkpoint_path(config_.checkpoint_dir);
  if (exchange_) {  // every rank its own residuals and warm starts
    const std::vector<NamedFloats> carried = exchange_->carried_state();
    // Any rank may fail to write (its node's folder, its disk): that ends the whole job at once,
    // with the reason, rather than leaving the other ranks waiting at the next collective.
    try {
      if (!carried.empty()) save_exchange_state(exchange_state_path(path, rank_), carried, state_.step, nranks_);
    } catch (const UsageError& e) {
      die(__FILE__, __LINE__, std::string("checkpoint: ") + e.what());
    }
  }
  if (rank_ != 0) return;
  TrainingState saved = state_;
  saved.settings = compared_settings(recorded_environment());
  saved.curve = result_.curve;
  saved.elapsed_s = elapsed();
  if (loss_scale_) {
    saved.loss_scale = loss_scale_->scale();
    saved.loss_scale_clean_steps = loss_scale_->clean_steps();
  }
  // A checkpoint is written beside the last one and renamed over it only when whole, so a full
  // disk ends the job with the last one intact, to resume from.
  try {
    save_checkpoint(path, *model_, *optimizer_, saved);
  } catch (const LibraryError& e) {
    throw LibraryError("cannot write the checkpoint of step " + std::to_string(state_.step) + " (" + e.what() +
                       "); any earlier checkpoint is kept whole");
  }
  std::lock_guard<std::mutex> lock(so_far_.mutex_);
  result_.checkpoint_seconds.push_back(seconds_since(start));
}

// A resumed run's exchange goes on from the checkpoint's step (the compressors' random draws
// follow it) with each rank's residuals and warm starts, when every rank has them from that step
// and as many ranks; otherwise (elastic rescaling, a run without them) they start afresh on every
// rank, as said: PowerSGD's warm start must be the same on all of them. Collective.
void TrainingRun::restore_exchange(const std::string& checkpoint) {
  if (!exchange_) return;
  exchange_->set_step(static_cast<uint64_t>(state_.step));
  if (config_.exchange.compressor == "none") return;
  std::string why;
  const std::optional<std::vector<NamedFloats>> carried =
      load_exchange_state(exchange_state_path(checkpoint, rank_), state_.step, nranks_, why);
  int mine = carried ? 1 : 0, everyone = 0;
  SB_MPI_CHECK(MPI_Allreduce(&mine, &everyone, 1, MPI_INT, MPI_MIN, comm_));
  if (!everyone) {
    log("[resume] not every rank has its exchange state of step %lld (rank 0: %s): error-feedback residuals and "
        "warm starts start afresh\n",
        static_cast<long long>(state_.step), carried ? "found" : why.c_str());
    return;
  }
  try {
    exchange_->restore_carried_state(*carried);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--resume: the exchange state does not fit this run (another --compressor or bucket plan?): " +
                     std::string(e.what()));
  }
  log("[resume] rank %d: %zu error-feedback and warm-start arrays restored\n", rank_, carried->size());
}

// Counts this resume, and the wall time since the first run_start that no process ran as run
// time: the work after the checkpoint, noticing the failure, the relaunch, the start-up before
// this process's run_start. The two run_starts are Unix times taken on rank 0's nodes, so the
// figure is as good as their clocks agree.
void TrainingRun::note_resume() {
  ++state_.resumes;
  if (state_.run_start_unix_s <= 0 || state_.resume_gap_s < 0) {  // a checkpoint from before these were kept
    state_.resume_gap_s = -1;
    state_.run_start_unix_s = 0;
    log("[resume] resume %lld of this run; the checkpoint does not say when the run started, so the wall time "
        "lost is not known\n", static_cast<long long>(state_.resumes));
    return;
  }
  const double gap = run_start_unix_s_ - state_.run_start_unix_s - state_.elapsed_s;
  log("[resume] resume %lld of this run: %.1f s of wall time since the checkpoint's run time (work redone, the "
      "failure, relaunch and start-up), %.1f s over all resumes\n",
      static_cast<long long>(state_.resumes), gap - state_.resume_gap_s, gap);
  state_.resume_gap_s = gap;
}

// Rank 0's settings now against those of the process that wrote the checkpoint: each change is
// said and kept, with those of earlier resumes, for the results file.
void TrainingRun::note_setting_changes() {
  if (rank_ != 0) return;
  if (!state_.settings) {
    log("[resume] the checkpoint does not record its run's settings (it predates them): changes are not known\n");
    return;
  }
  for (const std::string& change : setting_changes(*state_.settings, compared_settings(recorded_environment()))) {
    log("[resume] warning: a setting differs from the checkpointed run's: %s\n", change.c_str());
    state_.setting_changes.push_back("resume " + std::to_string(state_.resumes) + ": " + change);
  }
}

}  // namespace sb::models
