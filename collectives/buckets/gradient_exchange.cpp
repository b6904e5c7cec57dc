#include "collectives/buckets/gradient_exchange.hpp"

#include <algorithm>
#include <cstring>

#include "common/check.hpp"
#include "common/usage_error.hpp"

namespace sb {

GradientExchange::GradientExchange(MPI_Comm comm, const ExchangeConfig& config, BucketPlan plan,
                                   std::vector<float*> gradients)
    : plan_(std::move(plan)), gradients_(std::move(gradients)), overlap_(config.overlap) {
  SB_CHECK(gradients_.size() == plan_.buckets_of_tensor.size(), "one gradient per planned tensor");
  int level = MPI_THREAD_SINGLE;
  SB_MPI_CHECK(MPI_Query_thread(&level));
  SB_CHECK(level >= MPI_THREAD_SERIALIZED, "the gradient exchange thread needs MPI_THREAD_SERIALIZED");
  SB_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  SB_MPI_CHECK(MPI_Comm_size(comm_, &ranks_));
  const AllreduceImplInfo* info = find_allreduce_impl(config.algorithm);
  if (!info) throw UsageError("unknown allreduce algorithm '" + config.algorithm + "'");
  impl_ = info->create(comm_, config.impl);
  if (impl_->memory() != Memory::host)
    throw UsageError("allreduce '" + config.algorithm + "' works on device buffers; training here is on the host");
  for (const Bucket& b : plan_.buckets) fused_.emplace_back(b.count);
  if (config.compressor != "none") {
    int rank = 0;
    SB_MPI_CHECK(MPI_Comm_rank(comm_, &rank));
    CompressorParams params = config.compressor_params;
    params.stream = static_cast<uint64_t>(rank);
    for (size_t b = 0; b < plan_.buckets.size(); ++b)
      compressed_.push_back(
          std::make_unique<CompressedAllreduce>(make_compressor(config.compressor, params), config.error_feedback, comm_));
  }
  pieces_left_.resize(plan_.buckets.size());
  bucket_start_.assign(plan_.buckets.size(), 0);
  bucket_end_.assign(plan_.buckets.size(), 0);
  if (overlap_) thread_ = std::thread([this] { run_thread(); });
}

GradientExchange::~GradientExchange() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  impl_.reset();
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void GradientExchange::begin_step() {
  std::lock_guard lock(mutex_);
  for (size_t b = 0; b < plan_.buckets.size(); ++b) pieces_left_[b] = plan_.buckets[b].pieces.size();
  ready_.clear();
  done_ = 0;
  communication_s_ = 0;
  ++step_;
}

void GradientExchange::tensor_ready(size_t tensor) {
  bool any = false;
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
  if (any) changed_.notify_all();
}

void GradientExchange::reduce(size_t bucket) {
  const double start = MPI_Wtime();
  const Bucket& b = plan_.buckets[bucket];
  float* fused = fused_[bucket].data();
  for (const BucketPiece& piece : b.pieces)
    std::memcpy(fused + piece.bucket_offset, gradients_[piece.tensor] + piece.offset, piece.count * sizeof(float));
  float scale = 1.0f / static_cast<float>(ranks_);
  if (compressed_.empty()) {
    impl_->run(fused, fused, b.count, DataType::float32, RedOp::sum);
  } else {
    compressed_[bucket]->run(fused, b.count, step_);  // leaves the average
    scale = 1.0f;
  }
  for (const BucketPiece& piece : b.pieces) {
    float* out = gradients_[piece.tensor] + piece.offset;
    const float* in = fused + piece.bucket_offset;
    for (size_t i = 0; i < piece.count; ++i) out[i] = in[i] * scale;
  }
  const double end = MPI_Wtime();
  std::lock_guard lock(mutex_);
  communication_s_ += end - start;
  bucket_start_[bucket] = start;
  bucket_end_[bucket] = end;
  ++done_;
}

// Takes ready buckets one at a time. Every rank must start the same allreduces in the same
// order. In the order backward completes them (per-tensor, fixed, ddp) that holds by itself:
// backward reports gradients in the same order on every rank. Priority order (partition) depends
// on what is ready when, which differs between ranks, so the ranks first agree on the buckets
// ready everywhere (a small allreduce of readiness flags, as Horovod's coordinator does) and all
// take the most urgent of those.
void GradientExchange::run_thread() {
  const bool negotiate = plan_.strategy == BucketStrategy::partition && ranks_ > 1;
  std::vector<uint8_t> mine(plan_.buckets.size()), everywhere(plan_.buckets.size());
  size_t ready_seen = 0;  // ready_ entries at the last negotiation that found none in common
  for (;;) {
    size_t bucket = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() > ready_seen; });
      if (stopping_) return;
      if (!negotiate) {
        bucket = ready_.front();
        ready_.erase(ready_.begin());
      } else {
        std::fill(mine.begin(), mine.end(), 0);
        for (size_t b : ready_) mine[b] = 1;
        const size_t seen = ready_.size();
        lock.unlock();
        SB_MPI_CHECK(MPI_Allreduce(mine.data(), everywhere.data(), static_cast<int>(mine.size()), MPI_UINT8_T, MPI_MIN,
                                   comm_));
        lock.lock();
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
  return times;
}

}  // namespace sb
