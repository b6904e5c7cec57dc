#include "models/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "common/stats.hpp"
#include "common/usage_error.hpp"
#include "models/checkpoint.hpp"
#include "models/data/loader.hpp"
#include "models/resnet.hpp"

namespace sb::models {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string clock_text(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(seconds, 0.0));
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return text;
}

void validate(const TrainConfig& c) {
  if (c.batch <= 0) throw UsageError("--batch must be positive");
  if (c.eval_batch <= 0) throw UsageError("--eval-batch must be positive");
  if (c.epochs <= 0) throw UsageError("--epochs must be positive");
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
}

struct Evaluation {
  double top1 = 0, top5 = 0;
  int64_t images = 0;
};

Evaluation evaluate(ResNet& model, Loader& loader, const ImageShape& shape, Tensor& input) {
  Backend& backend = model.backend();
  int64_t correct1 = 0, correct5 = 0, seen = 0;
  loader.start_epoch(0);
  std::vector<float> logits;
  while (auto batch = loader.next()) {
    if (batch->count() == 0) continue;
    ensure_shape(backend, input, {batch->count(), shape.channels, shape.height, shape.width});
    backend.write(input, batch->images);
    const Tensor& out = model.forward(input, false);
    const int64_t classes = out.shape().c;
    logits.resize(static_cast<size_t>(out.count()));
    backend.read(out, logits);
    for (int64_t n = 0; n < batch->count(); ++n) {
      const float* z = logits.data() + n * classes;
      const float truth = z[batch->labels[n]];
      // Rank of the true class: how many classes score higher (ties count against it).
      int64_t above = 0;
      for (int64_t k = 0; k < classes; ++k) above += (z[k] > truth || (z[k] == truth && k < batch->labels[n]));
      correct1 += above == 0;
      correct5 += above < 5;
    }
    seen += batch->count();
  }
  Evaluation e;
  e.images = seen;
  if (seen > 0) e.top1 = static_cast<double>(correct1) / seen, e.top5 = static_cast<double>(correct5) / seen;
  return e;
}

}  // namespace

std::string checkpoint_path(const std::string& directory) { return directory + "/checkpoint.h5"; }

TrainResult train(const TrainConfig& config, std::FILE* progress) {
  validate(config);
  auto log = [&](const char* format, auto... args) {
    if (!progress) return;
    std::fprintf(progress, format, args...);
    std::fflush(progress);
  };
  std::unique_ptr<Backend> backend = make_backend(config.backend, config.threads);
  // Validate the model name before any data is read.
  make_resnet_config(config.model, 1, 2, 28, config.seed);

  const Clock::time_point run_start = Clock::now();
  DataSplits data = open_data(config.data, config.image_size);
  const ImageShape image = data.train->image_shape();
  ResNetConfig model_config =
      make_resnet_config(config.model, image.channels, data.train->num_classes(), image.height, config.seed);
  model_config.zero_init_residual = config.zero_init_residual;
  ResNet model(*backend, model_config);
  Optimizer optimizer(*backend, model.parameters(), config.optimizer);

  Loader train_loader(*data.train, Sampler(data.train->size(), config.batch, 0, 1, config.seed, true), config.workers,
                      config.prefetch);
  Loader eval_loader(*data.eval, Sampler(data.eval->size(), config.eval_batch, 0, 1, config.seed, false),
                     config.workers, config.prefetch);
  const int64_t steps_per_epoch = train_loader.sampler().batches_per_epoch();

  TrainResult result;
  result.parameter_count = model.parameter_count();
  result.train_flops_per_image = 3.0 * static_cast<double>(model.forward_flops_per_sample({1, image.channels, image.height, image.width}));
  result.image_size = image.height;
  result.dataset = data.train->name() == "synthetic" ? "synthetic" : config.data;

  LrSchedule schedule;
  schedule.peak = LrSchedule::scaled_peak(config.base_lr, config.batch);
  schedule.warmup_steps = static_cast<int64_t>(std::llround(config.warmup_epochs * steps_per_epoch));
  // --steps cuts a run short without changing its schedule, so a run stopped early (or resumed)
  // takes exactly the steps of the full one.
  schedule.total_steps = config.epochs * steps_per_epoch;
  schedule.decay = config.decay;
  schedule.end_lr = config.decay == DecayKind::poly ? std::min(1e-4, schedule.peak) : 0;  // MLPerf's LARS end rate

  TrainingState state;
  if (config.resume) {
    const std::string path = checkpoint_path(config.checkpoint_dir);
    if (!std::filesystem::exists(path)) throw UsageError("--resume: no checkpoint at '" + path + "'");
    state = load_checkpoint(path, model, optimizer);
    log("[resume] %s: epoch %lld, batch %lld, step %lld\n", path.c_str(), static_cast<long long>(state.epoch + 1),
        static_cast<long long>(state.next_batch), static_cast<long long>(state.step));
  }
  result.curve = state.curve;
  const double elapsed_before = state.elapsed_s;  // run time of the processes before this one
  auto elapsed = [&] { return elapsed_before + seconds_since(run_start); };
  auto save = [&] {
    TrainingState saved = state;
    saved.curve = result.curve;
    saved.elapsed_s = elapsed();
    save_checkpoint(checkpoint_path(config.checkpoint_dir), model, optimizer, saved);
  };

  log("[config] %s on %s (%lld x %lld x %lld), %lld parameters, %.2f GFLOP per training image; %s backend; "
      "batch %lld, peak lr %.4g, %lld steps per epoch\n",
      config.model.c_str(), result.dataset.c_str(), static_cast<long long>(image.channels),
      static_cast<long long>(image.height), static_cast<long long>(image.width),
      static_cast<long long>(result.parameter_count), result.train_flops_per_image / 1e9, backend->name().c_str(),
      static_cast<long long>(config.batch), schedule.peak, static_cast<long long>(steps_per_epoch));

  Tensor input, dlogits, eval_input;
  const int64_t last_step = config.max_steps > 0 ? std::min(config.max_steps, schedule.total_steps) : schedule.total_steps;
  bool stop = state.step >= last_step;
  for (int64_t epoch = state.epoch; epoch < config.epochs && !stop; ++epoch) {
    double train_seconds = 0;
    int64_t epoch_images = 0;
    train_loader.start_epoch(epoch, epoch == state.epoch ? state.next_batch : 0);
    if (epoch != state.epoch) state.epoch_loss_sum = 0, state.epoch_samples = 0;
    state.epoch = epoch;
    while (!stop) {
      const Clock::time_point step_start = Clock::now();
      std::optional<Batch> batch = train_loader.next();
      if (!batch) break;
      if (batch->count() == 0) continue;
      ensure_shape(*backend, input, {batch->count(), image.channels, image.height, image.width});
      backend->write(input, batch->images);
      const Tensor& logits = model.forward(input, true);
      ensure_shape(*backend, dlogits, logits.shape());
      const double loss = backend->softmax_cross_entropy(logits, batch->labels, config.label_smoothing, dlogits);
      if (!std::isfinite(loss)) throw UsageError("the training loss diverged (" + std::to_string(loss) + ") at step " +
                                                 std::to_string(state.step) + "; lower --lr");
      model.backward(dlogits);
      const double lr = schedule.at(state.step);
      optimizer.step(static_cast<float>(lr));
      backend->synchronize();
      const double step_s = seconds_since(step_start);
      result.step_seconds.push_back(step_s);
      train_seconds += step_s;
      epoch_images += batch->count();
      state.epoch_loss_sum += loss * static_cast<double>(batch->count());
      state.epoch_samples += batch->count();
      ++state.step;
      state.next_batch = batch->index + 1;
      stop = state.step >= last_step;
      if (config.print_every > 0 && (state.step % config.print_every == 0 || stop)) {
        const double rate = epoch_images / std::max(train_seconds, 1e-9);
        const double eta = static_cast<double>(last_step - state.step) * config.batch / std::max(rate, 1e-9);
        log("[train] epoch %lld step %lld/%lld loss %.4f lr %.4g %.1f img/s ETA %s\n",
            static_cast<long long>(epoch + 1), static_cast<long long>(batch->index + 1),
            static_cast<long long>(steps_per_epoch), loss, lr, rate, clock_text(eta).c_str());
      }
      if (!config.checkpoint_dir.empty() && config.checkpoint_steps > 0 && state.step % config.checkpoint_steps == 0)
        save();
    }
    const bool epoch_done = state.next_batch >= steps_per_epoch;
    if (!epoch_done) break;  // --steps ended the run inside this epoch
    EpochRecord record;
    record.epoch = epoch + 1;
    record.train_loss = state.epoch_samples > 0 ? state.epoch_loss_sum / static_cast<double>(state.epoch_samples) : 0;
    record.images_per_s = epoch_images / std::max(train_seconds, 1e-9);
    const bool last_epoch = epoch + 1 == config.epochs || stop;
    if ((epoch + 1) % config.eval_every == 0 || last_epoch) {
      const Clock::time_point eval_start = Clock::now();
      const Evaluation e = evaluate(model, eval_loader, image, eval_input);
      record.evaluated = true;
      record.top1 = e.top1;
      record.top5 = e.top5;
      result.best_top1 = std::max(result.best_top1, e.top1);
      log("[eval] epoch %lld: top-1 %.4f top-5 %.4f on %lld images (%.1f s); train loss %.4f, %.1f img/s\n",
          static_cast<long long>(epoch + 1), e.top1, e.top5, static_cast<long long>(e.images),
          seconds_since(eval_start), record.train_loss, record.images_per_s);
    }
    record.wall_s = elapsed();
    result.curve.push_back(record);
    state.epoch = epoch + 1;
    state.next_batch = 0;
    state.epoch_loss_sum = 0;
    state.epoch_samples = 0;
    if (config.target_accuracy > 0 && record.evaluated && record.top1 >= config.target_accuracy) {
      result.reached_target = true;
      result.time_to_target_s = record.wall_s;
      log("[target] top-1 %.4f >= %.4f after epoch %lld, %.1f s after run_start\n", record.top1,
          config.target_accuracy, static_cast<long long>(epoch + 1), record.wall_s);
      stop = true;
    }
    if (!config.checkpoint_dir.empty() && (epoch + 1) % config.checkpoint_every == 0 && !stop && !last_epoch) save();
  }
  if (!config.checkpoint_dir.empty()) save();  // where the run stopped, epoch end or not
  result.run_s = elapsed();
  result.steps = state.step;
  result.skipped_samples = train_loader.skipped_total() + eval_loader.skipped_total();
  if (result.step_seconds.size() > 1) {
    std::vector<double> rates;
    for (size_t i = 1; i < result.step_seconds.size(); ++i) rates.push_back(config.batch / result.step_seconds[i]);
    result.images_per_s = percentile(rates, 50);
  }
  return result;
}

}  // namespace sb::models
