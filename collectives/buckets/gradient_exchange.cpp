#include "collectives/buckets/gradient_exchange.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>

#include "collectives/buckets/bucket_packing.hpp"
#include "common/check.hpp"
#include "common/nvtx.hpp"
#include "common/usage_error.hpp"

namespace sb {

std::string progress_name(Progress progress) { return progress == Progress::poll ? "poll" : "thread"; }

Progress parse_progress(const std::string& name) {
  if (name == "thread") return Progress::thread;
  if (name == "poll") return Progress::poll;
  throw UsageError("--progress must be thread or poll, not '" + name + "'");
}

std::unique_ptr<AllreduceImpl> make_host_allreduce(MPI_Comm comm, const ExchangeConfig& config, MPI_Comm& own) {
  int level = MPI_THREAD_SINGLE;
  SB_MPI_CHECK(MPI_Query_thread(&level));
  SB_CHECK(level >= MPI_THREAD_SERIALIZED, "the gradient exchange thread needs MPI_THREAD_SERIALIZED");
  const AllreduceImplInfo* info = find_allreduce_impl(config.algorithm);
  if (!info) throw UsageError("unknown allreduce algorithm '" + config.algorithm + "'");
  SB_MPI_CHECK(MPI_Comm_dup(comm, &own));
  std::unique_ptr<AllreduceImpl> impl = info->create(own, config.impl);
  if (impl->memory() != Memory::host)
    throw UsageError("allreduce '" + config.algorithm + "' works on device buffers; training here is on the host");
  return impl;
}

GradientExchange::GradientExchange(MPI_Comm comm, const ExchangeConfig& config, BucketPlan plan,
                                   std::vector<float*> gradients)
    : plan_(std::move(plan)), gradients_(std::move(gradients)), overlap_(config.overlap), progress_(config.progress) {
  SB_CHECK(gradients_.size() == plan_.buckets_of_tensor.size(), "one gradient per planned tensor");
  if (plan_.strategy == BucketStrategy::cycle)
    throw std::invalid_argument("the cycle strategy's buckets are fused live, cycle by cycle: CycleExchange");
  if (progress_ == Progress::poll && (config.algorithm != "mpi" || config.compressor != "none"))
    throw UsageError("polled progress posts MPI_Iallreduce: it needs the mpi allreduce and no compressor");
  impl_ = make_host_allreduce(comm, config, comm_);
  SB_MPI_CHECK(MPI_Comm_size(comm_, &ranks_));
  // The fused buffers come from the implementation, as sb-allreduce's do: the shm transport's ranks
  // read each other's out of MPI shared windows (a collective allocation, in the same order on all).
  for (const Bucket& b : plan_.buckets)
    fused_.push_back(static_cast<float*>(impl_->allocate(b.count * sizeof(float))));
  if (config.compressor != "none") {
    int rank = 0;
    SB_MPI_CHECK(MPI_Comm_rank(comm_, &rank));
    CompressorParams params = config.compressor_params;
    params.stream = static_cast<uint64_t>(rank);
    for (size_t b = 0; b < plan_.buckets.size(); ++b) {
      params.tensors = bucket_tensor_views(plan_, b);
      compressed_.push_back(
          std::make_unique<CompressedAllreduce>(make_compressor(config.compressor, params), config.error_feedback, comm_));
    }
  }
  pieces_left_.resize(plan_.buckets.size());
  bucket_start_.assign(plan_.buckets.size(), 0);
  bucket_end_.assign(plan_.buckets.size(), 0);
  requests_.assign(plan_.buckets.size(), MPI_REQUEST_NULL);
  if (overlap_ && progress_ == Progress::thread) thread_ = std::thread([this] { run_thread(); });
}

GradientExchange::~GradientExchange() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (float* fused : fused_) impl_->release(fused);
  impl_.reset();
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void GradientExchange::begin_step() {
  std::lock_guard lock(mutex_);
  for (size_t b = 0; b < plan_.buckets.size(); ++b) pieces_left_[b] = plan_.buckets[b].pieces.size();
  ready_.clear();
  done_ = 0;
  communication_s_ = 0;
  negotiation_s_ = 0;
  negotiations_ = 0;
  ++step_;
}

void GradientExchange::tensor_ready(size_t tensor) {
  bool any = false;  // a bucket became ready
  {
    std::lock_guard lock(mutex_);
    for (size_t b : plan_.buckets_of_tensor[tensor]) {
      size_t pieces = 0;
      for (const BucketPiece& piece : plan_.buckets[b].pieces) pieces += piece.tensor == tensor;
      SB_CHECK(pieces_left_[b] >= pieces, "a tensor reported ready twice in one step");
      pieces_left_[b] -= pieces;
      if (pieces_left_[b] == 0) {
        ready_.push_back(b);
        any = true;
      }
    }
  }
  if (overlap_ && progress_ == Progress::poll) {
    // A layer boundary: post what is ready, progress what is posted.
    post_ready();
    test_posted();
    return;
  }
  if (any) changed_.notify_all();
}

// Every rank posts the buckets in one order: the order backward completes them, which is the same
// on every rank.
void GradientExchange::post_ready() {
  for (;;) {
    size_t bucket = 0;
    {
      std::lock_guard lock(mutex_);
      if (ready_.empty()) return;
      bucket = ready_.front();
      ready_.erase(ready_.begin());
    }
    post(bucket);
  }
}

void GradientExchange::pack(size_t bucket) { pack_bucket(plan_.buckets[bucket], gradients_, fused_[bucket], weight_); }

void GradientExchange::unpack(size_t bucket, float scale) {
  unpack_bucket(plan_.buckets[bucket], gradients_, fused_[bucket], scale);
}

void GradientExchange::reduce(size_t bucket) {
  const NvtxRange range("bucket", static_cast<int64_t>(bucket));
  const double start = MPI_Wtime();
  const Bucket& b = plan_.buckets[bucket];
  pack(bucket);
  float* fused = fused_[bucket];
  float scale = 1.0f / static_cast<float>(ranks_);
  if (compressed_.empty()) {
    impl_->run(fused, fused, b.count, DataType::float32, RedOp::sum);
  } else {
    compressed_[bucket]->run(fused, b.count, step_);  // leaves the average
    scale = 1.0f;
  }
  unpack(bucket, scale);
  const double end = MPI_Wtime();
  std::lock_guard lock(mutex_);
  communication_s_ += end - start;
  bucket_start_[bucket] = start;
  bucket_end_[bucket] = end;
  ++done_;
}

// MPI_Allreduce and MPI_Iallreduce of the same buffer give the same sums in Open MPI only when
// they pick the same algorithm, which is not promised: the polled path is checked against the
// exact average, not bit for bit against the threaded one.
void GradientExchange::post(size_t bucket) {
  SB_CHECK(plan_.buckets[bucket].count <= static_cast<size_t>(INT_MAX), "a bucket larger than MPI's int count");
  const double start = MPI_Wtime();
  pack(bucket);
  SB_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, fused_[bucket], static_cast<int>(plan_.buckets[bucket].count),
                              MPI_FLOAT, MPI_SUM, comm_, &requests_[bucket]));
  bucket_start_[bucket] = start;
  posted_.push_back(bucket);
}

void GradientExchange::take_in(size_t bucket) {
  unpack(bucket, 1.0f / static_cast<float>(ranks_));
  bucket_end_[bucket] = MPI_Wtime();
  ++done_;
}

void GradientExchange::test_posted() {
  for (size_t i = 0; i < posted_.size();) {
    const size_t bucket = posted_[i];
    int complete = 0;
    SB_MPI_CHECK(MPI_Test(&requests_[bucket], &complete, MPI_STATUS_IGNORE));
    if (!complete) {
      ++i;
      continue;
    }
    take_in(bucket);
    posted_.erase(posted_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

// Takes ready buckets one at a time. Every rank must start the same allreduces in the same order.
// In the order backward completes them (per-tensor, fixed, ddp) that holds by itself: backward
// reports gradients in the same order on every rank. Priority order (partition) depends on what is
// ready when, which differs between ranks, so the ranks first agree on the buckets ready
// everywhere (a small allreduce of readiness flags, as Horovod's coordinator does) and all take
// the most urgent of those.
void GradientExchange::run_thread() {
  const bool negotiate = plan_.strategy == BucketStrategy::partition && ranks_ > 1;
  std::vector<uint8_t> mine(plan_.buckets.size()), everywhere(plan_.buckets.size());
  size_t ready_seen = 0;  // ready_ entries at the last negotiation that found none in common
  for (;;) {
    size_t bucket = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] {
        return stopping_ || (negotiate ? ready_.size() > ready_seen : !ready_.empty());
      });
      if (stopping_) return;
      if (!negotiate) {
        bucket = ready_.front();  // the first to have become ready
        ready_.erase(ready_.begin());
      } else {
        std::fill(mine.begin(), mine.end(), 0);
        for (size_t b : ready_) mine[b] = 1;
        const size_t seen = ready_.size();
        lock.unlock();
        const double start = MPI_Wtime();
        SB_MPI_CHECK(MPI_Allreduce(mine.data(), everywhere.data(), static_cast<int>(mine.size()), MPI_UINT8_T, MPI_MIN,
                                   comm_));
        lock.lock();
        count_negotiation(MPI_Wtime() - start);
        bool found = false;
        for (size_t b = 0; b < everywhere.size(); ++b)
          if (everywhere[b] && (!found || plan_.buckets[b].priority < plan_.buckets[bucket].priority))
            bucket = b, found = true;
        if (!found) {
          // Nothing is ready everywhere yet: wait for this rank's backward to report more. (A rank
          // with every bucket ready always shares one with a rank that negotiates.)
          ready_seen = seen;
          continue;
        }
        ready_.erase(std::find(ready_.begin(), ready_.end(), bucket));
      }
      ready_seen = 0;
    }
    reduce(bucket);
    changed_.notify_all();
  }
}

std::vector<std::pair<double, double>> GradientExchange::bucket_spans() const {
  std::vector<std::pair<double, double>> spans;
  for (size_t b = 0; b < bucket_start_.size(); ++b) spans.emplace_back(bucket_start_[b], bucket_end_[b]);
  return spans;
}

ExchangeTimes GradientExchange::finish() {
  const double start = MPI_Wtime();
  if (!overlap_) {
    // Every tensor is ready; reduce the buckets in the order the overlapped path would.
    std::vector<size_t> order(plan_.buckets.size());
    for (size_t b = 0; b < order.size(); ++b) order[b] = b;
    if (plan_.strategy == BucketStrategy::partition)
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return plan_.buckets[a].priority < plan_.buckets[b].priority; });
    for (size_t b : order) reduce(b);
  } else if (progress_ == Progress::poll) {
    SB_CHECK(std::all_of(pieces_left_.begin(), pieces_left_.end(), [](size_t n) { return n == 0; }),
             "finish() before every gradient was reported ready");
    post_ready();
    for (const size_t bucket : std::vector<size_t>(posted_)) {
      SB_MPI_CHECK(MPI_Wait(&requests_[bucket], MPI_STATUS_IGNORE));
      take_in(bucket);
    }
    posted_.clear();
    // Posted buckets are in flight together: their communication time is the union of their
    // intervals (what the thread's one-at-a-time sum also is), not the sum.
    std::vector<std::pair<double, double>> spans = bucket_spans();
    std::sort(spans.begin(), spans.end());
    communication_s_ = 0;
    double covered_to = -1e300;
    for (const auto& [begin, end] : spans) {
      if (end > covered_to) communication_s_ += end - std::max(begin, covered_to);
      covered_to = std::max(covered_to, end);
    }
  } else {
    std::unique_lock lock(mutex_);
    SB_CHECK(std::all_of(pieces_left_.begin(), pieces_left_.end(), [](size_t n) { return n == 0; }),
             "finish() before every gradient was reported ready");
    changed_.wait(lock, [&] { return done_ == plan_.buckets.size(); });
  }
  ExchangeTimes times;
  times.wait_s = MPI_Wtime() - start;
  std::lock_guard lock(mutex_);
  times.communication_s = communication_s_;
  times.negotiation_s = negotiation_s_;
  times.negotiations = negotiations_;
  return times;
}

void GradientExchange::count_negotiation(double seconds) {
  communication_s_ += seconds;  // the negotiation is communication too
  negotiation_s_ += seconds;
  ++negotiations_;
}

std::vector<NamedFloats> GradientExchange::carried_state() const {
  std::vector<NamedFloats> state;
  for (size_t b = 0; b < compressed_.size(); ++b) {
    if (!compressed_[b]->residual().empty()) state.emplace_back(carried_name(b, "residual"), compressed_[b]->residual());
    if (std::vector<float> own = compressed_[b]->compressor().carried(); !own.empty())
      state.emplace_back(carried_name(b, "warm_start"), std::move(own));
  }
  return state;
}

void GradientExchange::restore_carried_state(const std::vector<NamedFloats>& state) {
  for (const auto& [name, values] : state) {
    size_t b = 0;
    for (; b < compressed_.size(); ++b) {
      if (name == carried_name(b, "residual")) {
        if (values.size() != plan_.buckets[b].count)
          throw std::invalid_argument(name + " holds " + std::to_string(values.size()) + " values, not the bucket's " +
                                      std::to_string(plan_.buckets[b].count));
        compressed_[b]->restore_residual(values);
        break;
      }
      if (name == carried_name(b, "warm_start")) {
        compressed_[b]->compressor().restore_carried(values);
        break;
      }
    }
    if (b == compressed_.size()) throw std::invalid_argument(name + " belongs to no bucket of this exchange");
  }
}

}  // namespace sb
