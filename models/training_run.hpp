#pragma once
// One training run on this rank (private to the trainer, behind models/trainer.hpp's train()):
// the model, its optimizer, the loaders and the gradient exchange, and the loop over epochs and
// steps. Its methods live in six files: trainer.cpp (set-up, evaluation, the epoch loop),
// training_run_step.cpp (one step, recorded or not), training_run_schedules.cpp (what changes
// between epochs: image size, batch, shares, learning rate), training_run_checkpoint.cpp
// (saving, and taking back the exchange's state), training_run_mllog.cpp (the MLPerf log's
// set-up keys) and training_run_trace.cpp (--trace's timeline).
#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collectives/buckets/gradient_averager.hpp"
#include "common/trace_events.hpp"
#include "models/data/dataset.hpp"
#include "models/data/host_memory.hpp"
#include "models/data/loader.hpp"
#include "models/layers.hpp"
#include "models/loss_scale.hpp"
#include "models/lr_schedule.hpp"
#include "models/mllog.hpp"
#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "models/trainer.hpp"
#include "models/training_state.hpp"

namespace sb::models {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Evaluation {
  double top1 = 0, top5 = 0;
  int64_t images = 0;
};

// One training run on this rank: the model, its optimizer, the loaders and the exchange.
class TrainingRun {
 public:
  // so_far: where the run keeps its result as it goes (TrainProgress), for another thread to read.
  TrainingRun(const TrainConfig& config, std::FILE* progress, MPI_Comm comm, Heartbeat heartbeat,
              TrainProgress& so_far);
  ~TrainingRun() {
    if (bn_comm_ != MPI_COMM_NULL) MPI_Comm_free(&bn_comm_);
  }
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;
  TrainResult execute();

 private:
  template <class... Args>
  void log(const char* format, Args... args) {
    if (!progress_) return;
    std::fprintf(progress_, format, args...);
    std::fflush(progress_);
  }
  double elapsed() const { return elapsed_before_ + seconds_since(run_start_); }
  double sum_over_ranks(double value) const;
  // Collective: replaces the nominal global batch of the steps since the last count, in
  // step_batches_, with the images the ranks trained in them (fewer where images were skipped).
  void count_trained_images();
  double images_trained_since(size_t first_step) const;  // over step_batches_[first_step..]
  double train_step(const Batch& batch, int64_t step, StepTimes& times);
  std::optional<Batch> next_batch(StepTimes& times);
  void fetch_ahead(const Batch& current);
  void write_inputs(const Batch& batch);
  void forward_backward(std::span<const int32_t> labels);
  bool forward_backward_recorded(std::span<const int32_t> labels);
  void gradient_ready(size_t parameter);
  void skip_empty_micro_batch(Tensor& loss);
  void require_samples_on_every_rank(const Batch& batch);
  float applied_loss_scale() const;
  void write_step_rates();
  void optimizer_step();
  float momentum_scale() const;
  void compute(const Tensor& input, std::span<const int32_t> labels, Tensor& loss);
  Evaluation evaluate();
  void average_running_statistics();
  void apply_resize_schedule(int64_t epoch);
  void apply_batch_schedule(int64_t epoch);
  void rebalance(int64_t epoch);
  double learning_rate(int64_t step) const;
  int64_t steps_in_epoch(int64_t epoch) const { return data_.train->size() / config_.batch_at(epoch); }
  void save();
  void restore_exchange(const std::string& checkpoint);
  void note_resume();
  void note_setting_changes();
  void log_mlperf_setup();
  void log_weights_initialization();
  void log_lr_schedule();
  // --trace: whether this process's step number `run_here` (0-based) is traced; starts the
  // timeline at the first (collective) and writes it after the last (collective).
  bool trace_step_begins(int64_t run_here);
  void trace_step_ends(int64_t run_here, int64_t step, int64_t images, Clock::time_point step_start);
  void trace_step_phases(Clock::time_point start, Clock::time_point backward_end, Clock::time_point optimizer_start);
  void write_trace_file();

  // Progress, and the phase a fault message names ("... while training, step 8 done").
  void beat(const std::string& phase) const {
    if (heartbeat_) heartbeat_(phase);
  }

  const TrainConfig& config_;
  std::FILE* progress_;
  Heartbeat heartbeat_;
  MPI_Comm comm_;
  int rank_ = 0, nranks_ = 1;
  MlLog mllog_;
  std::unique_ptr<Backend> backend_;
  ProfilingBackend* profiler_ = nullptr;  // backend_ itself under --profile-ops or --trace
  // --trace: the timeline of this process's steps 2 .. trace_steps + 1, its rows, and whether the
  // step now running is in it; written once the last of them is done (or the run ends before).
  TraceRecorder trace_;
  enum TraceTrack : int { kComputeTrack = 0, kCommunicationTrack = 1 };
  bool tracing_ = false;
  bool trace_written_ = false;
  int64_t trace_first_step_ = 0, trace_last_step_ = 0;  // the run's step numbers traced
  Clock::time_point run_start_;
  DataSplits data_;
  ImageShape image_;
  std::unique_ptr<ResNet> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::optional<DynamicLossScale> loss_scale_;  // fp16 only
  std::unique_ptr<Loader> train_loader_, eval_loader_;
  std::unique_ptr<GradientAverager> exchange_;  // host (GradientExchange) or device (NCCL)
  MPI_Comm bn_comm_ = MPI_COMM_NULL;  // --bn-span: this rank's batch-norm group
  BnSync bn_sync_;
  bool report_gradients_ = false;  // in the step's last backward: gradient_ready() for each gradient
  // A GPU backend's next batch, fetched during the step before and already being copied to the
  // device (Backend::prefetch), with the time the loader kept the trainer waiting for it.
  std::optional<Batch> ahead_;
  double ahead_data_s_ = 0;
  int64_t last_step_ = 0;  // the run's last step (execute() sets it)
  std::vector<Tensor> accumulated_;  // --accumulate > 1: the step's gradient sum
  LrSchedule schedule_;
  TrainingState state_;
  // The result so far and the global batch of every step this process ran, in the record that
  // another thread may read: this thread changes them only under so_far_.mutex_ (and reads them
  // without it, being their one writer).
  TrainProgress& so_far_;
  TrainResult& result_ = so_far_.result_;
  std::vector<int64_t>& step_batches_ = so_far_.step_batches_;
  // This rank's trained images in each of the last steps, whose step_batches_ entries still hold
  // the nominal global batch: counted over the ranks at print steps and epoch ends, where every
  // rank is anyway in a collective, rather than with one more allreduce per step.
  std::vector<int64_t> uncounted_images_;
  // --balance: forward and backward time and samples since the last rebalance, and every rank's
  // forward and backward seconds per image (empty until measured).
  double balance_compute_s_ = 0;
  int64_t balance_samples_ = 0;
  std::vector<double> seconds_per_image_;
  double elapsed_before_ = 0;
  double run_start_unix_s_ = 0;  // this process's run_start as Unix time
  std::array<int64_t, 3> last_saved_position_ = {-1, -1, -1};  // epoch, next batch, step of the last checkpoint
  std::vector<Tensor> inputs_;  // one per micro-batch (--accumulate), all written before the step
  Tensor dlogits_, eval_input_;
  std::vector<Tensor> losses_;  // one (1, 1, 1, 1) per micro-batch, read at the step's end

  // --cuda-graph: what a recording of forward_backward() holds fixed. A step replays it only when
  // all of this is as recorded: the inputs' shape, the model's tensors (whose addresses the
  // recording keeps) and the labels' pinned block.
  struct StepRecording {
    Shape input;
    int64_t tensors_generation = -1;
    const int32_t* labels = nullptr;
    bool operator==(const StepRecording&) const = default;
  };
  using PinnedLabels = std::vector<int32_t, HostAllocator<int32_t>>;
  StepRecording recorded_, warmed_;  // the recording replayed; the last step run uncaptured for one
  int64_t tensors_generation_ = 0;   // bumped when the model's tensors may have been reallocated
  PinnedLabels recorded_labels_;
  // --cuda-graph or loss scaling: the step's learning rate, gradient scale, apply flag and momentum
  // scale (MomentumStep::rates) and, at kLossScaleRate, the loss scale, written before each step;
  // empty otherwise.
  Tensor step_rates_;
  static constexpr int64_t kLossScaleRate = step_rate::count;
};

}  // namespace sb::models
