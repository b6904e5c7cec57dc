#include "models/data/loader.hpp"

#include <algorithm>
#include <chrono>

#include "common/usage_error.hpp"
#include "kernels/random.hpp"

namespace sb::models {

Sampler::Sampler(int64_t dataset_size, int64_t global_batch, int rank, int nranks, uint64_t seed, bool training)
    : size_(dataset_size), global_batch_(global_batch), rank_(rank), nranks_(nranks), seed_(seed), training_(training) {
  set_global_batch(global_batch);
}

void Sampler::set_global_batch(int64_t global_batch) {
  if (global_batch <= 0) throw UsageError("the batch size must be positive");
  if (training_ && global_batch % nranks_ != 0)
    throw UsageError("the global batch " + std::to_string(global_batch) + " does not divide over " +
                     std::to_string(nranks_) + " ranks");
  if (training_ && global_batch > size_)
    throw UsageError("the global batch " + std::to_string(global_batch) + " is larger than the data set (" +
                     std::to_string(size_) + " samples)");
  global_batch_ = global_batch;
  shares_.clear();
}

void Sampler::set_shares(std::vector<int64_t> shares) {
  if (!shares.empty()) {
    int64_t total = 0;
    for (int64_t share : shares) {
      if (share < 1) throw UsageError("every rank's share of a batch must be at least one sample");
      total += share;
    }
    if (static_cast<int>(shares.size()) != nranks_ || total != global_batch_)
      throw UsageError("the ranks' shares must sum to the global batch " + std::to_string(global_batch_));
  }
  shares_ = std::move(shares);
}

int64_t Sampler::batches_per_epoch() const {
  return training_ ? size_ / global_batch_ : (size_ + global_batch_ - 1) / global_batch_;
}

const std::vector<int64_t>& Sampler::permutation(int64_t epoch) const {
  std::vector<int64_t>& order = cache_->order;
  if (cache_->epoch == epoch) return order;
  order.resize(static_cast<size_t>(size_));
  for (int64_t i = 0; i < size_; ++i) order[i] = i;
  // Fisher-Yates from a counter-based stream keyed by (seed, epoch): the same on every rank.
  const uint64_t key = random_key(seed_, static_cast<uint64_t>(epoch), 0x5eed);
  for (int64_t i = size_ - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(random_bits(key, static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  cache_->epoch = epoch;
  return order;
}

std::vector<int64_t> Sampler::indices(int64_t epoch, int64_t batch) const {
  const int64_t start = batch * global_batch_, length = std::min(global_batch_, size_ - start);
  int64_t first = start + length * rank_ / nranks_, last = start + length * (rank_ + 1) / nranks_;
  if (!shares_.empty() && training_) {  // training batches are always whole
    first = start;
    for (int r = 0; r < rank_; ++r) first += shares_[static_cast<size_t>(r)];
    last = first + shares_[static_cast<size_t>(rank_)];
  }
  std::vector<int64_t> out;
  if (!training_) {
    for (int64_t i = first; i < last; ++i) out.push_back(i);
    return out;
  }
  std::lock_guard lock(cache_->mutex);
  const std::vector<int64_t>& order = permutation(epoch);
  out.assign(order.begin() + first, order.begin() + last);
  return out;
}

Loader::Loader(const Dataset& dataset, Sampler sampler, int workers, int prefetch, HostMemory* memory)
    : dataset_(dataset),
      sampler_(std::move(sampler)),
      workers_(std::max(workers, 1)),
      prefetch_(std::max(prefetch, 1)),
      memory_(memory) {}

Loader::~Loader() { stop(); }

void Loader::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  building_.clear();
  ready_.clear();
}

void Loader::set_global_batch(int64_t global_batch) {
  stop();
  sampler_.set_global_batch(global_batch);
}

void Loader::set_shares(std::vector<int64_t> shares) {
  stop();
  sampler_.set_shares(std::move(shares));
}

void Loader::start_epoch(int64_t epoch, int64_t first_batch) {
  stop();
  epoch_ = epoch;
  next_open_ = next_out_ = first_batch;
  end_ = sampler_.batches_per_epoch();
  opening_ = 0;
  stopping_ = false;
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { work(); });
}

namespace {

// Closes up the samples a batch left out (label -1), in order: the batch is then what one worker
// building it alone had made.
void leave_out_undecoded(Batch& batch, int64_t pixels) {
  const int64_t size = static_cast<int64_t>(batch.labels.size());
  int64_t kept = 0;
  for (int64_t position = 0; position < size; ++position) {
    if (batch.labels[position] < 0) continue;
    if (kept != position) {
      std::copy_n(batch.images.data() + position * pixels, pixels, batch.images.data() + kept * pixels);
      batch.labels[kept] = batch.labels[position];
    }
    ++kept;
  }
  batch.skipped = size - kept;
  batch.labels.resize(static_cast<size_t>(kept));
  batch.images.resize(static_cast<size_t>(kept * pixels));
}

}  // namespace

Loader::Building* Loader::unclaimed() {
  for (auto& [index, building] : building_)
    if (building.claimed < static_cast<int64_t>(building.indices.size())) return &building;
  return nullptr;
}

// Each worker takes the earliest batch's next run of samples; when every sample of the batches in
// the window is taken, it opens the next batch. A run is a quarter of a worker's share of a batch:
// few enough claims that the lock costs nothing beside a decode, and short enough that a worker
// held up by a large image does not leave the others idle at the batch's end for long.
void Loader::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] {
      return stopping_ || unclaimed() || (next_open_ < end_ && next_open_ < next_out_ + prefetch_) ||
             (next_open_ >= end_ && opening_ == 0);
    });
    if (stopping_) return;
    Building* target = unclaimed();
    if (!target) {
      if (next_open_ >= end_) return;  // every batch is opened and every sample taken
      const int64_t batch = next_open_++;
      ++opening_;
      lock.unlock();  // pinning a new block of memory is slow
      Building opened = open(batch);
      lock.lock();
      --opening_;
      changed_.notify_all();
      if (opened.indices.empty()) {  // an evaluation batch with no sample for this rank
        ready_.emplace(batch, std::move(opened.batch));
        continue;
      }
      target = &building_.emplace(batch, std::move(opened)).first->second;
    }
    const int64_t size = static_cast<int64_t>(target->indices.size());
    const int64_t run = std::max<int64_t>(1, (size + 4 * workers_ - 1) / (4 * workers_));
    const int64_t first = target->claimed, last = std::min(size, first + run);
    target->claimed = last;
    const int64_t batch = target->batch.index;
    lock.unlock();  // map nodes stay put: target outlives the lock's release (stop() joins first)
    const auto start = std::chrono::steady_clock::now();
    const int64_t decoded = load(target->indices, first, last, target->batch);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    build_seconds_ += seconds;
    built_images_ += decoded;  // undecodable files cost time but feed no step
    target->loaded += last - first;
    if (target->loaded < size) continue;
    Batch done = std::move(building_.extract(batch).mapped().batch);
    lock.unlock();  // the batch is this worker's alone now
    leave_out_undecoded(done, dataset_.image_shape().pixels());
    lock.lock();
    ready_.emplace(batch, std::move(done));
    changed_.notify_all();
  }
}

Loader::Building Loader::open(int64_t batch) const {
  Building out{Batch{batch, HostFloats(HostAllocator<float>(memory_)), {}, 0}, sampler_.indices(epoch_, batch)};
  const size_t size = out.indices.size();
  out.batch.images.resize(size * static_cast<size_t>(dataset_.image_shape().pixels()));
  out.batch.labels.assign(size, -1);
  return out;
}

int64_t Loader::load(const std::vector<int64_t>& indices, int64_t first, int64_t last, Batch& batch) const {
  const int64_t pixels = dataset_.image_shape().pixels();
  int64_t decoded = 0;
  for (int64_t position = first; position < last; ++position) {
    const int64_t index = indices[static_cast<size_t>(position)];
    const uint64_t augment = sampler_.training()
                                 ? random_key(sampler_.seed(), static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index)) | 1
                                 : 0;
    const int32_t label = dataset_.load(index, augment, batch.images.data() + position * pixels);
    batch.labels[static_cast<size_t>(position)] = label < 0 ? -1 : label;
    decoded += label >= 0;
  }
  return decoded;
}

double Loader::images_per_s() const {
  std::lock_guard lock(mutex_);
  return build_seconds_ > 0 ? static_cast<double>(built_images_) / build_seconds_ * workers_ : 0.0;
}

std::optional<Batch> Loader::next() {
  std::unique_lock lock(mutex_);
  if (next_out_ >= end_) return std::nullopt;
  changed_.wait(lock, [&] { return ready_.count(next_out_) > 0; });
  auto node = ready_.extract(next_out_);
  ++next_out_;
  skipped_total_ += node.mapped().skipped;
  lock.unlock();
  changed_.notify_all();
  return std::move(node.mapped());
}

}  // namespace sb::models
