// One training step: the shard's input written to the device, forward and backward over its
// micro-batches (--accumulate), the gradient exchange, the optimizer step and, under --cuda-graph,
// all of it recorded once and replayed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/agreed_usage.hpp"
#include "common/check.hpp"
#include "common/nvtx.hpp"
#include "common/usage_error.hpp"
#include "models/training_run.hpp"

namespace sb::models {
namespace {

// Micro-batch j of K in a shard of `count` samples: its samples [count j / K, count (j + 1) / K).
struct MicroBatch {
  int64_t first, count;
};
MicroBatch micro_batch(int64_t count, int64_t j, int64_t micro) {
  const int64_t first = count * j / micro;
  return {first, count * (j + 1) / micro - first};
}

}  // namespace

// Writes micro-batch j's images (K = --accumulate) into inputs_[j]. Every input is written before the step's first op, so that a
// recorded step (--cuda-graph) finds them all where the recording reads them.
void TrainingRun::write_inputs(const Batch& batch) {
  const ImageShape image = data_.train->image_shape();  // progressive resizing changes it
  const int64_t pixels = image.pixels(), micro = config_.accumulate;
  for (int64_t j = 0; j < micro; ++j) {
    const auto [first, count] = micro_batch(batch.count(), j, micro);
    ensure_shape(*backend_, inputs_[j], {count, image.channels, image.height, image.width});
    backend_->write(inputs_[j], std::span<const float>(batch.images.data() + first * pixels, count * pixels));
  }
}

// Forward, loss and backward from `input`; the mean loss goes to `loss` (read once the whole
// step is queued).
void TrainingRun::compute(const Tensor& input, std::span<const int32_t> labels, Tensor& loss) {
  if (labels.empty()) {
    skip_empty_micro_batch(loss);
    return;
  }
  const Tensor& logits = model_->forward(input);
  ensure_shape(*backend_, dlogits_, logits.shape());
  backend_->softmax_cross_entropy(logits, labels, config_.label_smoothing, dlogits_, loss);
  if (loss_scale_) {
    // Read from the device (step_rates_), so that a recorded step needs no new recording for a new scale.
    backend_->scale_by(dlogits_, step_rates_, kLossScaleRate);
  }
  model_->backward(dlogits_);
}

// A micro-batch left with no sample (every image of it failed to decode; a corrupt image
// shrinks its batch) has no forward or backward: its gradients are zero and its loss 0, reported
// ready in the order backward reports them, so the exchange and the other ranks go on as in any
// step. The micro-batch still counts in the average over micro-batches and ranks, as a shrunken
// one does at its full weight. (Under --bn-span the step never gets here: see
// require_samples_on_every_rank.)
void TrainingRun::skip_empty_micro_batch(Tensor& loss) {
  SB_CHECK(config_.bn_span == 1, "an empty micro-batch under --bn-span");
  const std::vector<Parameter*>& parameters = model_->parameters();
  for (size_t p = parameters.size(); p-- > 0;) {
    backend_->fill(parameters[p]->grad, 0.0f);
    if (report_gradients_) gradient_ready(p);
  }
  backend_->fill(loss, 0.0f);
}

// Under --bn-span every rank of a group must run each batch norm's forward (its statistics are
// allreduced), so a rank whose micro-batch has no sample cannot skip it as above, and only that
// rank knows. The ranks agree first (one allreduce of an int per step, under --bn-span alone):
// every rank throws the same UsageError, naming the lowest such rank. (That rank had ended the
// job alone with MPI_Abort, and rank 0, taken down by the launcher, saved its results as
// "interrupted by SIGTERM" when another rank was the one.)
void TrainingRun::require_samples_on_every_rank(const Batch& batch) {
  const int64_t micro = config_.accumulate;
  bool empty = false;
  for (int64_t j = 0; j < micro; ++j) empty = empty || micro_batch(batch.count(), j, micro).count == 0;
  const int mine = empty ? rank_ : nranks_;
  int first = nranks_;
  SB_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm_));
  if (first < nranks_)
    throw UsageError("at step " + std::to_string(state_.step + 1) + " no image of rank " + std::to_string(first) +
                     "'s shard decoded, and --bn-span needs samples on every rank of a group");
}

// The shard's gradients, from the inputs as written, left averaged in the parameters' grads. With
// K micro-batches, the first K - 1 gradients are summed after each backward, and the last one's
// backward adds its own as each is produced (gradient_ready), so that the exchange starts on a
// gradient while the rest of that backward runs, as with one micro-batch. Micro-batch j of a
// shard holds what rank j would hold in a K-rank run, so K micro-batches on one rank train as K
// ranks do.
void TrainingRun::forward_backward(std::span<const int32_t> labels) {
  const int64_t micro = config_.accumulate;
  const std::vector<Parameter*>& parameters = model_->parameters();
  const auto micro_labels = [&](int64_t j) {
    const auto [first, count] = micro_batch(static_cast<int64_t>(labels.size()), j, micro);
    return labels.subspan(static_cast<size_t>(first), static_cast<size_t>(count));
  };
  for (int64_t j = 0; j + 1 < micro; ++j) {
    compute(inputs_[j], micro_labels(j), losses_[j]);
    for (size_t p = 0; p < parameters.size(); ++p) {
      if (j == 0) backend_->copy(parameters[p]->grad, accumulated_[p]);
      else backend_->add(accumulated_[p], parameters[p]->grad, accumulated_[p]);
    }
  }
  report_gradients_ = true;
  compute(inputs_[micro - 1], micro_labels(micro - 1), losses_[micro - 1]);
  report_gradients_ = false;
}

// Parameter p's gradient is final in the step's last backward: with micro-batches, the sum of
// theirs divided by their number goes into its grad; then the exchange may take it.
void TrainingRun::gradient_ready(size_t p) {
  if (const int64_t micro = config_.accumulate; micro > 1) {
    Tensor& grad = model_->parameters()[p]->grad;
    backend_->add(accumulated_[p], grad, accumulated_[p]);
    backend_->copy(accumulated_[p], grad);
    backend_->scale(grad, 1.0f / static_cast<float>(micro));
  }
  if (tracing_) trace_.instant(kComputeTrack, model_->parameters()[p]->name, "gradient ready", Clock::now());
  if (exchange_) exchange_->tensor_ready(p);
}

// This step's values that a recorded step, or a loss-scaled one, reads from the device: written
// before the step starts, so the write never waits for queued work.
void TrainingRun::write_step_rates() {
  const double loss_scale = loss_scale_ ? loss_scale_->scale() : 1.0;
  float rates[kLossScaleRate + 1] = {};
  rates[step_rate::lr] = static_cast<float>(learning_rate(state_.step));
  rates[step_rate::grad_scale] = static_cast<float>(1.0 / loss_scale);
  rates[step_rate::apply] = 1;
  rates[step_rate::momentum_scale] = momentum_scale();
  rates[kLossScaleRate] = applied_loss_scale();
  backend_->write(step_rates_, rates);
}

// The optimizer step from the reduced gradients. Under loss scaling the device checks them for
// an overflow first and the update skips the step by that flag, so nothing waits for the check
// (the host reads it once the step is done); every rank holds the same reduced gradients, so
// every rank decides alike.
void TrainingRun::optimizer_step() {
  if (loss_scale_) {
    std::vector<const Tensor*> gradients;
    for (const Parameter* p : model_->parameters()) gradients.push_back(&p->grad);
    backend_->all_finite_into(gradients, step_rates_, step_rate::apply);
  }
  if (step_rates_.empty()) optimizer_->step(static_cast<float>(learning_rate(state_.step)), 1, nullptr, momentum_scale());
  else optimizer_->step(0, 1, &step_rates_);
}

// This step's momentum correction (1 without it): its rate over the rate of the last step that
// updated the momentum, which an fp16 step skipped for an overflow did not.
float TrainingRun::momentum_scale() const {
  return optimizer_->momentum_scale(learning_rate(state_.step), state_.momentum_lr);
}

// What this step multiplies the loss gradient by: the loss scale (1 without loss scaling), or
// infinity at a step given to TrainConfig::inject_overflow_steps.
float TrainingRun::applied_loss_scale() const {
  if (!loss_scale_) return 1.0f;
  const std::vector<int64_t>& inject = config_.inject_overflow_steps;
  if (std::find(inject.begin(), inject.end(), state_.step + 1) != inject.end())
    return std::numeric_limits<float>::infinity();
  return static_cast<float>(loss_scale_->scale());
}

// --cuda-graph: forward_backward() recorded once (Backend::begin_capture) and replayed every step
// after, with the gradient exchange that backward starts on a communication stream (NCCL calls
// record too) and the optimizer step. With --accumulate, the recording holds every micro-batch's
// forward and backward and the gradients' sum, each micro-batch reading its own input tensor.
// The first step for a recording runs uncaptured, so that every tensor, workspace, schedule and
// algorithm choice exists before the recording keeps their addresses; the next one records and
// replays it. Every rank records at the same steps: what decides it is the same on all. The
// values that change from step to step (learning rate, fp16 loss scale) are read from
// step_rates_, written before each step; LARS's trust ratios are computed on the device; under
// loss scaling the recording checks the reduced gradients itself and the update skips an
// overflowed step (the host reads the flag once the step is done). Returns whether the optimizer
// step was taken (recorded with the rest); if not, the caller takes it.
bool TrainingRun::forward_backward_recorded(std::span<const int32_t> labels) {
  // The recording reads its labels from one pinned block, refilled in place each step (the last
  // replay has finished: every step ends by waiting for the device).
  if (recorded_labels_.size() != labels.size())
    recorded_labels_ = PinnedLabels(labels.size(), 0, HostAllocator<int32_t>(backend_->input_memory()));
  std::copy(labels.begin(), labels.end(), recorded_labels_.begin());
  const StepRecording wanted{inputs_[0].shape(), tensors_generation_, recorded_labels_.data()};
  if (wanted == recorded_) {
    backend_->replay();
    if (exchange_) exchange_->replayed();  // the recording holds the step's whole exchange
    return true;
  }
  if (!(wanted == warmed_)) {
    forward_backward(recorded_labels_);
    warmed_ = wanted;
    return false;
  }
  backend_->begin_capture();
  try {
    forward_backward(recorded_labels_);
    if (exchange_) exchange_->queue_rest();  // and the buckets' reductions, joined back
    optimizer_step();
  } catch (...) {
    backend_->end_capture(false);
    throw;
  }
  backend_->end_capture();
  recorded_ = wanted;
  const std::string micro_batches =
      config_.accumulate > 1 ? " of " + std::to_string(config_.accumulate) + " micro-batches" : "";
  log("[cuda-graph] step %lld: forward, backward%s%s%s and optimizer step recorded for input %s\n",
      static_cast<long long>(state_.step + 1), micro_batches.c_str(), exchange_ ? ", gradient exchange" : "",
      loss_scale_ ? ", overflow check" : "", wanted.input.str().c_str());
  backend_->replay();
  return true;
}

// This step's batch: the one fetched ahead during the last step, or the loader's next (nothing at
// the end of the epoch). times.data_s is how long the loader kept the trainer waiting for it.
std::optional<Batch> TrainingRun::next_batch(StepTimes& times) {
  if (ahead_) {
    times.data_s = ahead_data_s_;
    return std::exchange(ahead_, std::nullopt);
  }
  const Clock::time_point start = Clock::now();
  std::optional<Batch> batch = train_loader_->next();
  times.data_s = seconds_since(start);
  return batch;
}

// On a GPU backend, once this step's backward is queued (its kernels still running): the epoch's
// next batch, whose copy to the device then overlaps the rest of this step. Within an epoch only
// (the loader gives nothing past its end), and never past the run's last step, so a batch fetched
// ahead is always the next one trained on.
void TrainingRun::fetch_ahead(const Batch& current) {
  if (current.index + 1 >= train_loader_->sampler().batches_per_epoch()) return;
  const Clock::time_point start = Clock::now();
  ahead_ = train_loader_->next();
  ahead_data_s_ = seconds_since(start);
  if (ahead_) backend_->prefetch(ahead_->images);
}

// One optimizer step over this rank's shard of a global batch; returns the shard's summed loss.
double TrainingRun::train_step(const Batch& batch, int64_t step, StepTimes& times) {
  // Where a rank waits for a peer still loading its batch: counted as waiting.
  const Clock::time_point agreed_start = Clock::now();
  if (config_.bn_span > 1) require_samples_on_every_rank(batch);
  const double agreed_s = seconds_since(agreed_start);
  const Clock::time_point start = Clock::now();
  const int64_t micro = config_.accumulate;
  if (!step_rates_.empty()) write_step_rates();
  write_inputs(batch);
  if (exchange_) exchange_->begin_step();
  bool stepped = false;  // the optimizer step was recorded with the rest (--cuda-graph)
  {
    const NvtxRange range("forward and backward");
    if (config_.cuda_graph) stepped = forward_backward_recorded(batch.labels);
    else forward_backward(batch.labels);
  }
  if (rank_ == config_.straggler_rank && config_.straggler_factor > 1)
    std::this_thread::sleep_for(std::chrono::duration<double>((config_.straggler_factor - 1) * seconds_since(start)));
  const Clock::time_point backward_end = Clock::now();
  balance_compute_s_ += std::chrono::duration<double>(backward_end - start).count();
  balance_samples_ += batch.count();
  if (backend_->copies_ahead() && step + 1 < last_step_) fetch_ahead(batch);
  if (exchange_) {
    const NvtxRange range("waiting for the gradient exchange");
    const ExchangeTimes exchanged = exchange_->finish();
    times.wait_s = exchanged.wait_s;
    times.comm_s = exchanged.communication_s;
    times.negotiation_s = exchanged.negotiation_s;
    times.negotiations = exchanged.negotiations;
    times.buckets = exchange_->plan().buckets.size();
  }
  const Clock::time_point optimizer_start = Clock::now();
  {
    const NvtxRange range("optimizer step, and the device's queue");
    if (!stepped) optimizer_step();
    backend_->synchronize();
  }
  if (tracing_) trace_step_phases(start, backward_end, optimizer_start);
  times.compute_s = std::chrono::duration<double>(backward_end - start).count() + seconds_since(optimizer_start);
  bool applied = true;
  if (loss_scale_) {
    applied = read_all(*backend_, step_rates_)[step_rate::apply] != 0;
    loss_scale_->update(applied);
    if (!applied)
      log("[loss-scale] step %lld: gradients overflowed; step skipped, scale now %g\n", static_cast<long long>(step + 1),
          loss_scale_->scale());
  }
  if (applied) state_.momentum_lr = learning_rate(state_.step);
  double loss_sum = 0;
  // A loss that diverges on one rank ends every rank at this step (one allreduce of an int): a rank
  // that went on would wait for the one that stopped in the next step's exchange. The allreduce is
  // where a rank now waits for a slower peer, so its time counts as waiting.
  const Clock::time_point agree_start = Clock::now();
  agree_on_usage(comm_, [&] {
    for (int64_t j = 0; j < micro; ++j) {
      const double loss = backend_->read_scalar(losses_[j]);
      if (!std::isfinite(loss))
        throw UsageError("the training loss diverged (" + std::to_string(loss) + ") at step " +
                         std::to_string(state_.step) + "; lower --lr");
      loss_sum += loss * static_cast<double>(micro_batch(batch.count(), j, micro).count);
    }
  });
  times.wait_s += agreed_s + seconds_since(agree_start);
  return loss_sum;
}

}  // namespace sb::models
