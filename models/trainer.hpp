#pragma once
// Data-parallel training to a target accuracy over the ranks of a communicator: every global batch
// sharded over the ranks by sample index, gradients averaged bucket by bucket while backward runs
// (collectives/buckets/), batch norm local to each rank. One rank is the plain single-process
// case. Times as MLPerf times it: from run_start (taken before the data is opened) to the end of
// the first evaluation at or above the target, evaluations included.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "collectives/buckets/gradient_exchange.hpp"
#include "models/epoch_schedule.hpp"
#include "models/lr_schedule.hpp"
#include "models/mllog.hpp"
#include "models/optimizer.hpp"
#include "models/profiling_backend.hpp"
#include "models/training_state.hpp"

namespace sb::models {

struct TrainConfig {
  std::string model = "resnet20";
  std::string data = "fashion-mnist";
  std::string backend = "onednn";
  Precision precision = Precision::fp32;  // the cudnn backend's math; the CPU backends run fp32
  bool cudnn_timed_search = false;        // cudnn: time convolution algorithms (else heuristics)
  bool cuda_graph = false;                // cudnn: replay each step's forward and backward as a CUDA graph
  // The initial dynamic loss scale (halved on overflow, doubled after 2000 clean steps); 0: 65536
  // under fp16 and no loss scaling otherwise. Any precision takes it (at fp32 it is harmless).
  double loss_scale = 0;
  // Steps whose ops are timed one by one (ProfilingBackend), from this process's second step on
  // (the first creates primitives and plans); 0: none. They are left out of the throughput.
  int64_t profile_ops = 0;
  // A Chrome trace (TraceRecorder) of this process's steps 2 to trace_steps + 1 on every rank: each
  // op, the step's phases, each gradient's readiness and each bucket's reduction; empty: none.
  // Host backends only (their ops are done when they return).
  std::string trace;
  int64_t trace_steps = 3;
  int64_t image_size = 224;  // imagefolder data: the crop size
  int64_t batch = 128;       // global batch
  int64_t eval_batch = 500;
  int64_t epochs = 10;
  int64_t max_steps = 0;     // stop after this many steps in all (0: no limit)
  double target_accuracy = 0;  // top-1 fraction; 0: train all the epochs
  int64_t eval_every = 1;    // epochs
  OptimizerConfig optimizer;
  double base_lr = 0.1;      // per 256 images (linear scaling rule)
  double warmup_epochs = 0;
  DecayKind decay = DecayKind::cosine;
  float label_smoothing = 0;
  bool zero_init_residual = false;
  uint64_t seed = 1;
  int threads = 0;           // 0: OMP_NUM_THREADS or every core
  int workers = 2, prefetch = 4;
  std::string checkpoint_dir;  // empty: no checkpoints
  int64_t checkpoint_every = 1;  // epochs
  int64_t checkpoint_steps = 0;  // also every this many steps (0: only at epoch ends)
  bool resume = false;
  int64_t print_every = 50;  // steps
  std::string mllog;         // MLPerf-style log file (rank 0); empty: none
  MlPerfSubmission submission;  // the log's submission keys (--label submission_org=... and so on)
  // Data parallelism.
  ExchangeConfig exchange;   // allreduce implementation, transport, overlap
  BucketStrategy bucket_strategy = BucketStrategy::ddp;
  double bucket_mb = 25;
  double cycle_ms = kDefaultCycleMs;  // cycle strategy: the time between its loop's cycles
  int64_t accumulate = 1;    // micro-batches per step on each rank (gradient accumulation)
  // A straggler: this rank's forward and backward take `straggler_factor` times as long (it
  // sleeps the difference), to see what one slow rank costs the others.
  int straggler_rank = -1;
  double straggler_factor = 1;
  // Tests: at these steps (numbered from 1, as the log numbers them) the loss gradient is scaled
  // by infinity instead of the loss scale, the overflow an fp16 step can meet, injected the same
  // way into uncaptured and recorded steps. Needs loss scaling (fp16 or loss_scale).
  std::vector<int64_t> inject_overflow_steps;
  // Adapt each rank's share of the global batch to its measured speed, every epoch from the
  // second, weighting the gradient average by the shares so that it stays the batch's mean.
  bool balance = false;
  // Batch norm over groups of this many consecutive ranks (1: local to each rank).
  int64_t bn_span = 1;
  // Progressive resizing, as the fast ImageNet records train: (pixels, from epoch) pairs in epoch
  // order, 0-based epochs; evaluation stays at image_size. Empty: image_size throughout.
  EpochSchedule resize_schedule;
  // Batch-size ramp: (global batch, from epoch) pairs in epoch order; `batch` before the first.
  // The learning rate follows the linear scaling rule: the schedule's rate x batch / `batch`.
  EpochSchedule batch_schedule;

  // The global batch of a 0-based epoch.
  int64_t batch_at(int64_t epoch) const;
};


// Per step, as this rank saw it.
struct StepTimes {
  double data_s = 0;     // waiting for the loader
  double compute_s = 0;  // forward, backward, optimizer
  double wait_s = 0;     // blocked on gradient communication after backward
  double comm_s = 0;     // inside the allreduces (overlapped or not)
  double negotiation_s = 0;  // of comm_s, agreeing what is ready (partition and cycle)
  size_t negotiations = 0;   // how many (the cycle strategy: one a cycle)
  size_t buckets = 0;        // the gradient buckets reduced (the cycle strategy's change from step to step)
};

struct TrainResult {
  std::vector<EpochRecord> curve;
  bool reached_target = false;
  double time_to_target_s = -1;  // run_start to the end of the evaluation that reached it
  double run_s = 0;              // run_start to the end of training
  // A resumed run: times resumed, and the wall seconds since run_start that no process ran (work
  // lost after the checkpoints resumed from, relaunches, start-ups; TrainingState); -1: unknown.
  int64_t resumes = 0;
  double resume_gap_s = 0;
  std::vector<std::string> resume_setting_changes;  // rank 0's, every resume's (TrainingState::setting_changes)
  double earlier_processes_s = 0;  // the run time in run_s of the processes before this one
  // Rank 0's time for each checkpoint this process wrote (the BN statistics' allreduce, its
  // exchange state, the file): run time that checkpointing costs.
  std::vector<double> checkpoint_seconds;
  int64_t steps = 0;
  std::vector<double> step_seconds;  // every step this process ran, data wait included
  std::vector<StepTimes> step_times;  // this rank's breakdown of each step
  double images_per_s = 0;  // median step rate, the first step (primitive creation) and profiled ones excluded
  std::vector<OpTime> op_profile;  // profile_ops: this rank's time per op kind over the profiled steps
  int64_t profiled_steps = 0;
  int64_t skipped_samples = 0;
  int64_t loss_scale_skipped_steps = 0;  // fp16: steps skipped for overflowed gradients
  double loader_images_per_s = 0;  // what the training loader's workers alone delivered (this rank)
  std::string device;              // this rank's GPU ("cuda:0 NVIDIA H200"); empty on the host
  int64_t peak_device_bytes = 0;   // the most memory in use on that GPU (Backend::peak_device_bytes)
  int64_t parameter_count = 0;
  double train_flops_per_image = 0;  // 3x the forward convolution and fc FLOPs
  double best_top1 = 0;
  int64_t image_size = 0;
  std::string dataset;
};

// Called with what the run is doing ("step 12", "evaluation 3"), after every step: a heartbeat
// for a watchdog.
using Heartbeat = std::function<void(const std::string& phase)>;

// What a run has finished so far, readable from another thread while train() runs, and after it
// has thrown: sb-train saves it when the job ends early (a timeout, SIGTERM from a scheduler's time
// limit or from the launcher after a peer died, a failed checkpoint). train() adds to it after
// every step and every epoch, under a lock that a snapshot takes too.
class TrainProgress {
 public:
  // This rank's record so far, summarised as train() summarises its result: run_s up to now,
  // images_per_s the median rate of the steps so far. skipped_samples counts this rank's alone,
  // since summing it over the ranks is a collective that a failing job may not finish.
  TrainResult snapshot() const;
  // Whether a training step has finished: what a run that ends early has to save.
  bool has_finished_steps() const;

  // Called on the training thread when an epoch's record has been added (after its evaluation,
  // if any), with the number of that epoch, outside the lock (so it may take a snapshot()): where
  // sb-train saves its results as they stand. Set it before train() starts.
  std::function<void(int64_t epochs_done)> on_epoch_done;

 private:
  friend class TrainingRun;
  mutable std::mutex mutex_;
  TrainResult result_;
  // The images trained in every step in result_.step_seconds, over all ranks; the steps since the
  // last print or epoch end hold the nominal global batch (counting them is a collective).
  std::vector<int64_t> step_batches_;
  bool started_ = false;               // run_start_ is set
  std::chrono::steady_clock::time_point run_start_;
  double elapsed_before_ = 0;          // a resumed run's seconds before this process
};

// The median images/s of result.step_seconds (step_batches: each step's images), leaving out
// the first step (it creates primitives and plans) and the profiled ones; 0 without such steps.
double median_step_rate(const TrainResult& result, const std::vector<int64_t>& step_batches);

// Collective over comm. Throws UsageError for bad configuration or data (the same on every rank).
// Progress lines go to `progress` (pass it on rank 0 only). `so_far`, when given, is kept current
// for another thread to read (TrainProgress).
TrainResult train(const TrainConfig& config, std::FILE* progress, MPI_Comm comm, Heartbeat heartbeat = {},
                  TrainProgress* so_far = nullptr);

std::string checkpoint_path(const std::string& directory);

}  // namespace sb::models
