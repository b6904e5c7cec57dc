#pragma once
// Single-process training to a target accuracy: the loop the data-parallel trainer extends. Times
// as MLPerf times it: from run_start (taken before the data is opened) to the end of the first
// evaluation at or above the target, evaluations included.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "models/lr_schedule.hpp"
#include "models/optimizer.hpp"
#include "models/training_state.hpp"

namespace sb::models {

struct TrainConfig {
  std::string model = "resnet20";
  std::string data = "fashion-mnist";
  std::string backend = "onednn";
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
};

struct TrainResult {
  std::vector<EpochRecord> curve;
  bool reached_target = false;
  double time_to_target_s = -1;  // run_start to the end of the evaluation that reached it
  double run_s = 0;              // run_start to the end of training
  int64_t steps = 0;
  std::vector<double> step_seconds;  // every step this process ran, data wait included
  double images_per_s = 0;           // median step rate, the first step (primitive creation) excluded
  int64_t skipped_samples = 0;
  int64_t parameter_count = 0;
  double train_flops_per_image = 0;  // 3x the forward convolution and fc FLOPs
  double best_top1 = 0;
  int64_t image_size = 0;
  std::string dataset;
};

// Throws UsageError for bad configuration or data. Progress lines go to `progress`.
TrainResult train(const TrainConfig& config, std::FILE* progress);

std::string checkpoint_path(const std::string& directory);

}  // namespace sb::models
