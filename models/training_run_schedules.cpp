// What changes between epochs of a training run: the image size (progressive resizing), the
// global batch (batch ramp) and the learning rate that follows it, and each rank's share of the
// batch (--balance).
#include <string>
#include <vector>

#include "common/check.hpp"
#include "models/batch_shares.hpp"
#include "models/epoch_schedule.hpp"
#include "models/training_run.hpp"

namespace sb::models {

void TrainingRun::apply_resize_schedule(int64_t epoch) {
  const int64_t size = value_at(config_.resize_schedule, epoch, 0);
  if (size == 0 || size == data_.train->image_shape().height) return;
  train_loader_->stop();
  data_.train->set_image_size(size);
  log("[resize] epoch %lld: training images of %lld px\n", static_cast<long long>(epoch + 1), static_cast<long long>(size));
  mllog_.point("train_image_size", MlLog::number(static_cast<double>(size)), MlLog::epoch_metadata(epoch + 1));
}

// The linear scaling rule through a batch ramp: the rate of the schedule, scaled by how much the
// current epoch's global batch exceeds the first epoch's.
double TrainingRun::learning_rate(int64_t step) const {
  return schedule_.at(step) * static_cast<double>(config_.batch_at(state_.epoch)) /
         static_cast<double>(config_.batch_at(0));
}

void TrainingRun::apply_batch_schedule(int64_t epoch) {
  const int64_t batch = config_.batch_at(epoch);
  if (batch == train_loader_->sampler().global_batch()) return;
  train_loader_->set_global_batch(batch);
  log("[batch] epoch %lld: global batch %lld (%lld per rank), learning rate x %.3g\n", static_cast<long long>(epoch + 1),
      static_cast<long long>(batch), static_cast<long long>(batch / nranks_),
      static_cast<double>(batch) / static_cast<double>(config_.batch_at(0)));
  mllog_.point("global_batch_size", MlLog::number(static_cast<double>(batch)), MlLog::epoch_metadata(epoch + 1));
}

// Shares of the global batch in proportion to each rank's measured images per second (forward and
// backward, straggler included), at least one image each; the exchange weights each rank's mean
// gradient by its share so that the average is still the mean over the whole batch.
void TrainingRun::rebalance(int64_t epoch) {
  if (!config_.balance || nranks_ == 1) return;
  if (balance_samples_ > 0) {
    const double mine = balance_compute_s_ / static_cast<double>(balance_samples_);
    std::vector<double>& per_image = seconds_per_image_;
    per_image.resize(static_cast<size_t>(nranks_));
    SB_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_DOUBLE, per_image.data(), 1, MPI_DOUBLE, comm_));
    balance_compute_s_ = 0;
    balance_samples_ = 0;
    std::string times;
    for (double t : per_image) {
      char text[32];
      std::snprintf(text, sizeof text, "%s%.3f", times.empty() ? "" : ",", t * 1e3);
      times += text;
    }
    log("[balance] forward+backward ms per image by rank: %s\n", times.c_str());
  }
  if (seconds_per_image_.empty()) return;
  const int64_t batch = config_.batch_at(epoch);
  const std::vector<int64_t> shares = shares_by_speed(batch, seconds_per_image_);
  if (shares == train_loader_->sampler().shares()) return;
  train_loader_->set_shares(shares);
  exchange_->set_weight(static_cast<float>(shares[static_cast<size_t>(rank_)]) * static_cast<float>(nranks_) /
                        static_cast<float>(batch));
  std::string text;
  for (int64_t share : shares) text.append(text.empty() ? "" : ",").append(std::to_string(share));
  log("[balance] epoch %lld: per-rank batch %s of %lld\n", static_cast<long long>(epoch + 1), text.c_str(),
      static_cast<long long>(batch));
}

}  // namespace sb::models
