#include "models/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>

#include "common/agreed_usage.hpp"
#include "common/check.hpp"
#include "common/nvtx.hpp"
#include "common/sizes.hpp"
#include "common/stats.hpp"
#include "common/usage_error.hpp"
#include "models/checkpoint.hpp"
#include "models/data/loader.hpp"
#include "models/loss_scale.hpp"
#include "models/mllog.hpp"
#include "models/resnet.hpp"
#include "models/training_run.hpp"
#include "models/training_setup.hpp"

namespace sb::models {
namespace {

// Past any training run. The schedule is laid out epoch by epoch before the first step, which for
// 10^12 epochs had taken until the watchdog ended the job.
constexpr int64_t kMostEpochs = 1'000'000;

std::string clock_text(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(seconds, 0.0));
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return text;
}

// What a compressed exchange's payloads come to in a step on each rank, over every bucket (the
// compressor as each bucket makes it, with its tensors), and that over the fp32 gradients':
// " (payload 0.13 MiB a step, 7.9x under fp32)".
std::string payload_text(const ExchangeConfig& exchange, const BucketPlan& plan) {
  double payload = 0, fp32 = 0;
  CompressorParams params = exchange.compressor_params;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    params.tensors = bucket_tensor_views(plan, b);
    payload += static_cast<double>(make_compressor(exchange.compressor, params)->payload_bytes(plan.buckets[b].count));
    fp32 += static_cast<double>(plan.buckets[b].count * sizeof(float));
  }
  char text[96];
  std::snprintf(text, sizeof text, " (payload %.3g MiB a step, %.3gx under fp32)", payload / kBytesPerMiB,
                payload > 0 ? fp32 / payload : 0.0);
  return text;
}

void validate(const TrainConfig& c, int nranks) {
  if (c.batch <= 0) throw UsageError("--batch must be positive");
  if (c.eval_batch <= 0) throw UsageError("--eval-batch must be positive");
  if (c.epochs <= 0 || c.epochs > kMostEpochs) throw UsageError("--epochs must be from 1 to 1000000");
  if (c.max_steps < 0) throw UsageError("--steps must not be negative");
  if (c.eval_every <= 0) throw UsageError("--eval-every must be positive");
  if (c.image_size < 8 || c.image_size > 1024) throw UsageError("--image-size must be 8 to 1024 px");
  if (c.target_accuracy < 0 || c.target_accuracy > 1) throw UsageError("--target-accuracy is a fraction in [0, 1]");
  if (c.base_lr <= 0) throw UsageError("--lr must be positive");
  if (c.warmup_epochs < 0) throw UsageError("--warmup-epochs must not be negative");
  if (c.label_smoothing < 0 || c.label_smoothing >= 1) throw UsageError("--label-smoothing is in [0, 1)");
  if (c.resume && c.checkpoint_dir.empty()) throw UsageError("--resume needs --checkpoint DIR");
  if (!c.checkpoint_dir.empty() && !std::filesystem::is_directory(c.checkpoint_dir))
    throw UsageError("--checkpoint directory '" + c.checkpoint_dir + "' does not exist");
  if (c.accumulate < 1) throw UsageError("--accumulate must be at least 1");
  if (c.loss_scale != 0 && !(c.loss_scale >= 1 && c.loss_scale <= DynamicLossScale::kMaximum))
    throw UsageError("--loss-scale is 1 to 2^24 (or 0: 65536 under fp16, none otherwise)");
  const std::string& compressor = c.exchange.compressor;
  if (c.cuda_graph && compressor != "none" && compressor != "fp16" && compressor != "bf16")
    throw UsageError("--cuda-graph records uncompressed or fp16/bf16 gradients only, not --compressor " + compressor +
                     ": the others draw keys by step or read figures back to the host, which a replay would freeze, "
                     "or are not yet checked under capture");
  if (c.cuda_graph && c.bn_span > 1)
    throw UsageError("--cuda-graph cannot record --bn-span's statistics, which are allreduced through the host");
  if (c.profile_ops < 0) throw UsageError("--profile-ops must not be negative");
  if (c.profile_ops > 0 && c.cuda_graph)
    throw UsageError("--profile-ops times each op alone, which a --cuda-graph step (one launch) cannot: "
                     "use one of them");
  // As steps - 2, not profile_ops + 2, which overflowed for 2^63-1 and let a 2-step run through.
  if (c.profile_ops > 0 && c.max_steps > 0 && c.profile_ops > c.max_steps - 2)
    throw UsageError("--profile-ops " + std::to_string(c.profile_ops) + " needs --steps of at least " +
                     (c.profile_ops > INT64_MAX - 2 ? std::string("2^63") : std::to_string(c.profile_ops + 2)) +
                     " (a first step that warms up, then the profiled ones, then one for the throughput)");
  if (!c.trace.empty() && c.trace_steps < 1) throw UsageError("--trace-steps must be at least 1");
  if (!c.trace.empty() && c.backend == "cudnn")
    throw UsageError("--trace times ops as the host sees them, and a GPU runs its ops asynchronously: for a GPU's "
                     "timeline run sb-train under Nsight Systems (nsys profile), where NVTX ranges mark its steps "
                     "and phases");
  if (!c.inject_overflow_steps.empty() && c.loss_scale == 0 && c.precision != Precision::fp16)
    throw UsageError("an injected overflow needs loss scaling (fp16 or a loss scale)");
  if (c.straggler_rank >= nranks) throw UsageError("--straggler names rank " + std::to_string(c.straggler_rank) +
                                                   " of " + std::to_string(nranks));
  if (c.bn_span < 1 || nranks % c.bn_span != 0)
    throw UsageError("--bn-span " + std::to_string(c.bn_span) + " does not divide the " + std::to_string(nranks) +
                     " ranks into groups");
  if (c.bn_span > 1 && c.accumulate > 1)
    throw UsageError("--bn-span synchronises whole shards, which --accumulate splits into micro-batches");
  if (c.balance && c.accumulate > 1)
    throw UsageError("--balance gives ranks unequal shares, which --accumulate cannot split into equal micro-batches");
  std::vector<int64_t> batches = {c.batch};
  for (const auto& [size, epoch] : c.batch_schedule) batches.push_back(size);
  // Compared by division first: ranks x accumulate overflowed for --accumulate 2^63-1, wrapped to
  // a divisor of the batch, and the run allocated micro-batches until the watchdog ended it.
  for (int64_t batch : batches)
    if (c.accumulate > batch / nranks || batch % (nranks * c.accumulate) != 0)
      throw UsageError("the global batch " + std::to_string(batch) + " does not divide into " + std::to_string(nranks) +
                       " ranks x " + std::to_string(c.accumulate) + " micro-batches (--accumulate)");
}

}  // namespace

TrainingRun::TrainingRun(const TrainConfig& config, std::FILE* progress, MPI_Comm comm, Heartbeat heartbeat,
                         TrainProgress& so_far)
    : config_(config),
      progress_(progress),
      heartbeat_(std::move(heartbeat)),
      comm_(comm),
      mllog_(progress ? config.mllog : std::string()),
      so_far_(so_far) {
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks_));
  agree_on_usage(comm, [&] { validate(config, nranks_); });  // --checkpoint's folder may be missing on one node
  mllog_.start("init_start");
  backend_ = make_training_backend(config, comm);
  if (config.profile_ops > 0 || !config.trace.empty()) {
    auto profiler = std::make_unique<ProfilingBackend>(std::move(backend_));
    profiler_ = profiler.get();
    backend_ = std::move(profiler);
  }
  if (config.cuda_graph && !backend_->can_capture()) throw UsageError("--cuda-graph needs --backend cudnn");
  make_resnet_config(config.model, 1, 2, 28, config.seed);  // an unknown model fails before the data is read
  log_mlperf_setup();
  mllog_.end("init_stop");

  // run_start: before any data is read. Model construction (under a second) is inside the timing.
  run_start_ = Clock::now();
  run_start_unix_s_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  {
    std::lock_guard<std::mutex> lock(so_far_.mutex_);
    so_far_.run_start_ = run_start_;
    so_far_.started_ = true;
  }
  mllog_.start("run_start");
  // Every rank opens the data itself: on a cluster each node may hold its own staged copy, and one
  // that lacks it must not leave the others waiting for it (common/agreed_usage.hpp).
  agree_on_usage(comm, [&] {
    data_ = open_data(config.data, config.image_size);
    if (!config.resize_schedule.empty() && !data_.train->resizable())
      throw UsageError("--resize-schedule needs images that can be cropped to any size (imagefolder or synthetic data)");
  });
  require_same_data_on_every_rank(data_, comm);
  image_ = data_.train->image_shape();
  ResNetConfig model_config =
      make_resnet_config(config.model, image_.channels, data_.train->num_classes(), image_.height, config.seed);
  model_config.zero_init_residual = config.zero_init_residual;
  if (config.bn_span > 1) {
    // The BN statistics are reduced by the training thread while the gradient exchange's thread
    // may be inside an allreduce too: two threads in MPI at once.
    int level = MPI_THREAD_SINGLE;
    SB_MPI_CHECK(MPI_Query_thread(&level));
    if (level < MPI_THREAD_MULTIPLE && exchange_calls_mpi_from_its_own_thread(config))
      throw UsageError("--bn-span with a communication thread needs MPI_THREAD_MULTIPLE: add --progress poll or --overlap 0");
    SB_MPI_CHECK(MPI_Comm_split(comm, rank_ / static_cast<int>(config.bn_span), rank_, &bn_comm_));
    bn_sync_.allreduce_sum = [this](std::vector<double>& values) {
      SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, bn_comm_));
    };
    model_config.bn_sync = &bn_sync_;
  }
  model_ = std::make_unique<ResNet>(*backend_, model_config);
  log_weights_initialization();
  optimizer_ = std::make_unique<Optimizer>(*backend_, model_->parameters(), config.optimizer);
  if (config.loss_scale > 0) loss_scale_.emplace(config.loss_scale);
  else if (config.precision == Precision::fp16) loss_scale_.emplace();
  for (int64_t j = 0; j < config.accumulate; ++j) losses_.push_back(backend_->allocate({1, 1, 1, 1}));
  inputs_.resize(static_cast<size_t>(config.accumulate));
  if (config.cuda_graph || loss_scale_) step_rates_ = backend_->allocate({1, kLossScaleRate + 1, 1, 1});
  train_loader_ = std::make_unique<Loader>(
      *data_.train, Sampler(data_.train->size(), config.batch, rank_, nranks_, config.seed, true), config.workers,
      config.prefetch, backend_->input_memory());
  eval_loader_ = std::make_unique<Loader>(
      *data_.eval, Sampler(data_.eval->size(), config.eval_batch, rank_, nranks_, config.seed, false), config.workers,
      config.prefetch, backend_->input_memory());
  mllog_.point("train_samples", MlLog::number(static_cast<double>(data_.train->size())));
  mllog_.point("eval_samples", MlLog::number(static_cast<double>(data_.eval->size())));

  if (nranks_ > 1) {
    // The exchange works on the backend's own memory and stream, not through the profiler.
    Backend& own = profiler_ ? profiler_->inner() : *backend_;
    exchange_ = make_gradient_exchange(config, own, model_->parameters(), comm);
  }
  if (config.accumulate > 1)
    for (Parameter* p : model_->parameters()) accumulated_.push_back(backend_->allocate(p->grad.shape()));
  model_->set_gradient_hook([this](size_t p) {
    if (report_gradients_) gradient_ready(p);
  });

  for (const auto& [size, epoch] : config.batch_schedule)
    if (size > data_.train->size())
      throw UsageError("--batch-schedule: the global batch " + std::to_string(size) + " is larger than the data set (" +
                       std::to_string(data_.train->size()) + " samples)");
  const int64_t steps_per_epoch = steps_in_epoch(0);
  schedule_.peak = LrSchedule::scaled_peak(config.base_lr, config.batch_at(0));
  // Capped where llround would overflow: 1e300 epochs had become a negative count, no warm-up at all
  // under the name of the longest. Past the run, a warm-up keeps the rate below its peak throughout.
  schedule_.warmup_steps =
      static_cast<int64_t>(std::llround(std::min(config.warmup_epochs * static_cast<double>(steps_per_epoch), 0x1p62)));
  // --steps cuts a run short without changing its schedule, so a run stopped early (or resumed)
  // takes exactly the steps of the full one. A batch ramp makes later epochs shorter.
  schedule_.total_steps = 0;
  for (int64_t epoch = 0; epoch < config.epochs; ++epoch) schedule_.total_steps += steps_in_epoch(epoch);
  schedule_.decay = config.decay;
  schedule_.end_lr = config.decay == DecayKind::poly ? std::min(1e-4, schedule_.peak) : 0;  // MLPerf's LARS end rate
  log_lr_schedule();

  {
    std::lock_guard<std::mutex> lock(so_far_.mutex_);
    result_.parameter_count = model_->parameter_count();
    result_.train_flops_per_image =
        3.0 * static_cast<double>(model_->forward_flops_per_sample({1, image_.channels, image_.height, image_.width}));
    result_.image_size = image_.height;
    result_.dataset = data_.train->name() == "synthetic" ? "synthetic" : config.data;
    result_.device = backend_->device_name();
  }
  state_.ranks = nranks_;
  state_.run_start_unix_s = run_start_unix_s_;
  if (config.resume) {
    const std::string path = checkpoint_path(config.checkpoint_dir);
    const Clock::time_point load_start = Clock::now();
    uint64_t content = 0;
    agree_on_usage(comm, [&] {  // each rank reads it: a node without it, or with a damaged copy, ends every rank
      if (!std::filesystem::exists(path)) throw UsageError("--resume: no checkpoint at '" + path + "'");
      state_ = load_checkpoint(path, *model_, *optimizer_, &content);
    });
    require_same_checkpoint_on_every_rank(path, content, comm);
    if (loss_scale_ && state_.loss_scale > 0) loss_scale_->restore(state_.loss_scale, state_.loss_scale_clean_steps);
    // An older checkpoint's momentum was last updated, but for a skipped fp16 step, at the last step's rate.
    if (std::isnan(state_.momentum_lr)) state_.momentum_lr = state_.step > 0 ? learning_rate(state_.step - 1) : 0;
    log("[resume] %s: epoch %lld, batch %lld, step %lld (read in %.2f s)\n", path.c_str(),
        static_cast<long long>(state_.epoch + 1), static_cast<long long>(state_.next_batch),
        static_cast<long long>(state_.step), seconds_since(load_start));
    if (state_.ranks != nranks_) {
      log("[resume] rescaled from %lld ranks to %d, global batch %lld kept: %lld per rank x %lld micro-batches\n",
          static_cast<long long>(state_.ranks), nranks_, static_cast<long long>(config.batch),
          static_cast<long long>(config.batch / nranks_), static_cast<long long>(config.accumulate));
      mllog_.point("elastic_rescale", "{\"from_ranks\": " + std::to_string(state_.ranks) + ", \"to_ranks\": " +
                                          std::to_string(nranks_) + "}");
    }
    restore_exchange(path);
    state_.ranks = nranks_;
    note_resume();
    note_setting_changes();
  }
  elapsed_before_ = state_.elapsed_s;
  {
    std::lock_guard<std::mutex> lock(so_far_.mutex_);
    result_.curve = state_.curve;
    result_.steps = state_.step;
    result_.resumes = state_.resumes;
    result_.resume_gap_s = state_.resume_gap_s;
    result_.resume_setting_changes = state_.setting_changes;
    result_.earlier_processes_s = state_.elapsed_s;
    so_far_.elapsed_before_ = elapsed_before_;
  }
  log("[config] %s on %s (%lld x %lld x %lld), %lld parameters, %.2f GFLOP per training image; %s backend; "
      "%d rank%s; global batch %lld, peak lr %.4g (%s, momentum %g%s), %lld steps per epoch\n",
      config.model.c_str(), result_.dataset.c_str(), static_cast<long long>(image_.channels),
      static_cast<long long>(image_.height), static_cast<long long>(image_.width),
      static_cast<long long>(result_.parameter_count), result_.train_flops_per_image / 1e9, backend_->name().c_str(),
      nranks_, nranks_ == 1 ? "" : "s", static_cast<long long>(config.batch_at(0)), schedule_.peak,
      optimizer_name(config.optimizer.kind).c_str(), config.optimizer.momentum,
      config.optimizer.corrects_momentum() ? " with correction" : "", static_cast<long long>(steps_per_epoch));
  if (config.cuda_graph)
    log("[config] each step's forward, loss, backward%s%s and optimizer step replayed as a CUDA graph\n",
        exchange_ ? ", gradient exchange" : "", loss_scale_ ? ", overflow check" : "");
  if (loss_scale_) log("[config] dynamic loss scaling from %g\n", loss_scale_->scale());
  if (!exchange_) return;
  char buckets[160];
  if (config.bucket_strategy == BucketStrategy::cycle)  // what its cycles find: no plan to count
    std::snprintf(buckets, sizeof buckets, "cycle buckets of up to %g MiB, fused every %g ms", config.bucket_mb,
                  config.cycle_ms);
  else
    std::snprintf(buckets, sizeof buckets, "%s buckets of %g MiB (%zu buckets)",
                  bucket_strategy_name(config.bucket_strategy).c_str(), config.bucket_mb,
                  exchange_->plan().buckets.size());
  log("[config] gradients: %s, %s, overlap %s%s\n",
      config.exchange.compressor == "none"
          ? (config.exchange.algorithm == "nccl"
                 ? std::string("ncclAllReduce")
                 : config.exchange.algorithm + " allreduce on " + std::string(name_of(config.exchange.impl.transport)))
                .c_str()
          : ("compressed by " + config.exchange.compressor +
             (config.exchange.error_feedback ? " with error feedback" : " without error feedback") +
             payload_text(config.exchange, exchange_->plan()))
                .c_str(),
      buckets, config.exchange.overlap ? "on" : "off",
      config.exchange.overlap && config.exchange.progress == Progress::poll ? " (polled between layers)" : "");
}

double TrainingRun::sum_over_ranks(double value) const {
  double sum = value;
  if (nranks_ > 1) SB_MPI_CHECK(MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, comm_));
  return sum;
}

void TrainingRun::count_trained_images() {
  std::vector<int64_t> global(uncounted_images_.size());
  if (nranks_ > 1)
    SB_MPI_CHECK(MPI_Allreduce(uncounted_images_.data(), global.data(), static_cast<int>(global.size()), MPI_INT64_T,
                               MPI_SUM, comm_));
  else
    global = uncounted_images_;
  std::lock_guard<std::mutex> lock(so_far_.mutex_);
  std::copy(global.begin(), global.end(), step_batches_.end() - static_cast<std::ptrdiff_t>(global.size()));
  uncounted_images_.clear();
}

double TrainingRun::images_trained_since(size_t first_step) const {
  return static_cast<double>(std::accumulate(step_batches_.begin() + static_cast<std::ptrdiff_t>(first_step),
                                             step_batches_.end(), int64_t{0}));
}

Evaluation TrainingRun::evaluate() {
  int64_t correct1 = 0, correct5 = 0, seen = 0;
  eval_loader_->start_epoch(0);
  std::vector<float> logits;
  while (auto batch = eval_loader_->next()) {
    if (batch->count() == 0) continue;
    ensure_shape(*backend_, eval_input_, {batch->count(), image_.channels, image_.height, image_.width});
    backend_->write(eval_input_, batch->images);
    const Tensor out = model_->infer(eval_input_);
    const int64_t classes = out.shape().c;
    logits.resize(static_cast<size_t>(out.count()));
    backend_->read(out, logits);
    for (int64_t n = 0; n < batch->count(); ++n) {
      const float* z = logits.data() + n * classes;
      const int32_t label = batch->labels[n];
      // The rank of the true class: how many classes score higher (ties count against it).
      int64_t above = 0;
      for (int64_t k = 0; k < classes; ++k) above += (z[k] > z[label] || (z[k] == z[label] && k < label));
      correct1 += above == 0;
      correct5 += above < 5;
    }
    seen += batch->count();
  }
  Evaluation e;
  const double total = sum_over_ranks(static_cast<double>(seen));
  e.images = static_cast<int64_t>(total);
  if (total > 0) {
    e.top1 = sum_over_ranks(static_cast<double>(correct1)) / total;
    e.top5 = sum_over_ranks(static_cast<double>(correct5)) / total;
  }
  return e;
}

TrainResult TrainingRun::execute() {
  const int64_t last_step = last_step_ =
      config_.max_steps > 0 ? std::min(config_.max_steps, schedule_.total_steps) : schedule_.total_steps;
  bool stop = state_.step >= last_step;
  for (int64_t epoch = state_.epoch; epoch < config_.epochs && !stop; ++epoch) {
    double train_seconds = 0;
    const size_t epoch_first_step = step_batches_.size();  // this epoch's steps in step_batches_
    mllog_.start("epoch_start", MlLog::epoch_metadata(epoch + 1));
    apply_resize_schedule(epoch);
    apply_batch_schedule(epoch);
    rebalance(epoch);
    const int64_t batch_size = config_.batch_at(epoch);
    const int64_t steps_per_epoch = train_loader_->sampler().batches_per_epoch();
    SB_CHECK(!ahead_, "a batch fetched ahead crossed an epoch's end");
    train_loader_->start_epoch(epoch, epoch == state_.epoch ? state_.next_batch : 0);
    if (epoch != state_.epoch) state_.epoch_loss_sum = 0, state_.epoch_samples = 0;
    state_.epoch = epoch;
    while (!stop) {
      const int64_t run_here = static_cast<int64_t>(result_.step_seconds.size());  // this process's steps so far
      tracing_ = trace_step_begins(run_here);
      const NvtxRange step_range("step", state_.step + 1);
      const Clock::time_point step_start = Clock::now();
      StepTimes times;
      std::optional<Batch> batch;
      {
        const NvtxRange range("data (waiting for the loader)");
        batch = next_batch(times);
      }
      if (!batch) break;
      if (tracing_) trace_.span(kComputeTrack, "data (waiting for the loader)", "step", step_start, Clock::now());
      const double lr = learning_rate(state_.step);
      // --profile-ops: this process's steps 2 .. N + 1, each op timed alone.
      const bool profiled = profiler_ && run_here >= 1 && run_here <= config_.profile_ops;
      if (profiled) profiler_->set_timing(true);
      if (tracing_) profiler_->set_trace(&trace_, kComputeTrack);
      const double loss_sum = train_step(*batch, state_.step, times);
      if (profiled) profiler_->set_timing(false);
      if (tracing_) trace_step_ends(run_here, state_.step + 1, batch->count(), step_start);
      const double step_s = seconds_since(step_start);
      train_seconds += step_s;
      state_.epoch_loss_sum += loss_sum;
      state_.epoch_samples += batch->count();
      ++state_.step;
      {
        std::lock_guard<std::mutex> lock(so_far_.mutex_);
        result_.step_seconds.push_back(step_s);
        result_.step_times.push_back(times);
        step_batches_.push_back(batch_size);  // until count_trained_images() replaces it
        result_.steps = state_.step;
        if (profiled) ++result_.profiled_steps;
        if (profiled && result_.profiled_steps == config_.profile_ops) result_.op_profile = profiler_->profile();
        if (loss_scale_) result_.loss_scale_skipped_steps = loss_scale_->skipped_steps();
      }
      uncounted_images_.push_back(batch->count());
      beat("training, step " + std::to_string(state_.step) + " done");
      state_.next_batch = batch->index + 1;
      stop = state_.step >= last_step;
      if (config_.print_every > 0 && (state_.step % config_.print_every == 0 || stop)) {
        count_trained_images();
        const double loss = sum_over_ranks(loss_sum) / std::max(static_cast<double>(step_batches_.back()), 1.0);
        const double rate = images_trained_since(epoch_first_step) / std::max(train_seconds, 1e-9);
        const double steps_done = static_cast<double>(step_batches_.size() - epoch_first_step);
        const double eta = static_cast<double>(last_step - state_.step) * train_seconds / steps_done;
        log("[train] epoch %lld step %lld/%lld loss %.4f lr %.4g %.1f img/s ETA %s\n",
            static_cast<long long>(epoch + 1), static_cast<long long>(batch->index + 1),
            static_cast<long long>(steps_per_epoch), loss, lr, rate, clock_text(eta).c_str());
      }
      if (!config_.checkpoint_dir.empty() && config_.checkpoint_steps > 0 && state_.step % config_.checkpoint_steps == 0)
        save();
    }
    if (state_.next_batch < steps_per_epoch) break;  // --steps ended the run inside this epoch
    mllog_.end("epoch_stop", MlLog::epoch_metadata(epoch + 1));
    EpochRecord record;
    record.epoch = epoch + 1;
    const double samples = sum_over_ranks(static_cast<double>(state_.epoch_samples));
    record.train_loss = samples > 0 ? sum_over_ranks(state_.epoch_loss_sum) / samples : 0;
    count_trained_images();
    record.images_per_s = images_trained_since(epoch_first_step) / std::max(train_seconds, 1e-9);
    const bool last_epoch = epoch + 1 == config_.epochs || stop;
    if ((epoch + 1) % config_.eval_every == 0 || last_epoch) {
      const Clock::time_point eval_start = Clock::now();
      mllog_.start("eval_start", MlLog::epoch_metadata(epoch + 1));
      beat("evaluating after epoch " + std::to_string(epoch + 1));
      average_running_statistics();
      const Evaluation e = evaluate();
      // Evaluation at another batch lets go of the model's training tensors (ResNet::infer), and
      // its shapes may have grown the backend's workspaces: a recorded step holds both.
      ++tensors_generation_;
      mllog_.end("eval_stop", MlLog::epoch_metadata(epoch + 1));
      mllog_.point("eval_accuracy", MlLog::number(e.top1), MlLog::epoch_metadata(epoch + 1));
      record.evaluated = true;
      record.top1 = e.top1;
      record.top5 = e.top5;
      log("[eval] epoch %lld: top-1 %.4f top-5 %.4f on %lld images (%.1f s); train loss %.4f, %.1f img/s\n",
          static_cast<long long>(epoch + 1), e.top1, e.top5, static_cast<long long>(e.images),
          seconds_since(eval_start), record.train_loss, record.images_per_s);
    }
    record.wall_s = elapsed();
    record.clock_s = state_.resume_gap_s >= 0 ? record.wall_s + state_.resume_gap_s : std::nan("");
    const bool reached = config_.target_accuracy > 0 && record.evaluated && record.top1 >= config_.target_accuracy;
    {
      std::lock_guard<std::mutex> lock(so_far_.mutex_);
      result_.curve.push_back(record);
      if (record.evaluated) result_.best_top1 = std::max(result_.best_top1, record.top1);
      if (reached) result_.reached_target = true, result_.time_to_target_s = record.wall_s;
      result_.loader_images_per_s = train_loader_->images_per_s();
      result_.skipped_samples = static_cast<int64_t>(train_loader_->skipped_total() + eval_loader_->skipped_total());
      result_.peak_device_bytes = backend_->peak_device_bytes();
    }
    if (so_far_.on_epoch_done) so_far_.on_epoch_done(epoch + 1);
    state_.epoch = epoch + 1;
    state_.next_batch = 0;
    state_.epoch_loss_sum = 0;
    state_.epoch_samples = 0;
    if (reached) {
      log("[target] top-1 %.4f >= %.4f after epoch %lld, %.1f s after run_start\n", record.top1,
          config_.target_accuracy, static_cast<long long>(epoch + 1), record.wall_s);
      stop = true;
    }
    if (!config_.checkpoint_dir.empty() && (epoch + 1) % config_.checkpoint_every == 0 && !stop && !last_epoch) save();
  }
  if (!config_.checkpoint_dir.empty()) save();  // where the run stopped, epoch end or not
  if (!config_.trace.empty() && !trace_written_) write_trace_file();  // the run ended inside the window, or before
  const bool aborted = config_.target_accuracy > 0 && !result_.reached_target;
  mllog_.end("run_stop", std::string("{\"status\": \"") + (aborted ? "aborted" : "success") + "\"}");
  const double skipped_samples =
      sum_over_ranks(static_cast<double>(train_loader_->skipped_total() + eval_loader_->skipped_total()));
  count_trained_images();  // the steps of an epoch that --steps ended
  std::lock_guard<std::mutex> lock(so_far_.mutex_);
  result_.run_s = elapsed();
  result_.steps = state_.step;
  if (loss_scale_) result_.loss_scale_skipped_steps = loss_scale_->skipped_steps();
  result_.loader_images_per_s = train_loader_->images_per_s();
  result_.skipped_samples = static_cast<int64_t>(skipped_samples);
  result_.peak_device_bytes = backend_->peak_device_bytes();
  if (profiler_) result_.op_profile = profiler_->profile();
  result_.images_per_s = median_step_rate(result_, step_batches_);
  return result_;
}

double median_step_rate(const TrainResult& result, const std::vector<int64_t>& step_batches) {
  std::vector<double> rates;  // the first step and the profiled ones (2 .. profiled + 1) left out
  for (size_t i = 1 + static_cast<size_t>(result.profiled_steps); i < result.step_seconds.size(); ++i)
    rates.push_back(static_cast<double>(step_batches[i]) / result.step_seconds[i]);
  return rates.empty() ? 0.0 : percentile(rates, 50);
}

TrainResult TrainProgress::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TrainResult now = result_;
  if (started_) now.run_s = elapsed_before_ + seconds_since(run_start_);
  now.images_per_s = median_step_rate(result_, step_batches_);
  return now;
}

bool TrainProgress::has_finished_steps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !result_.step_seconds.empty();
}

std::string checkpoint_path(const std::string& directory) { return directory + "/checkpoint.h5"; }

int64_t TrainConfig::batch_at(int64_t epoch) const { return value_at(batch_schedule, epoch, batch); }

TrainResult train(const TrainConfig& config, std::FILE* progress, MPI_Comm comm, Heartbeat heartbeat,
                  TrainProgress* so_far) {
  TrainProgress own;
  TrainingRun run(config, progress, comm, std::move(heartbeat), so_far ? *so_far : own);
  return run.execute();
}

}  // namespace sb::models
