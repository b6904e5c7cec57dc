#include "collectives/buckets/cycle_exchange.hpp"

#include <algorithm>
#include <stdexcept>

#include "collectives/buckets/bucket_packing.hpp"
#include "common/check.hpp"
#include "common/nvtx.hpp"

namespace sb {

CycleExchange::CycleExchange(MPI_Comm comm, const ExchangeConfig& config, const std::vector<GradientTensor>& tensors,
                             double cycle_s, double threshold_mb, std::vector<float*> gradients)
    : plan_(empty_cycle_plan(tensors, cycle_s)),
      threshold_mb_(threshold_mb),
      gradients_(std::move(gradients)),
      overlap_(config.overlap) {
  SB_CHECK(gradients_.size() == tensors.size(), "one gradient per tensor");
  // sb-train refuses these with the reasons (bench/train/options.cpp).
  if (threshold_mb < 0) throw std::invalid_argument("a negative fusion threshold");
  if (config.compressor != "none") throw std::invalid_argument("the cycle exchange compresses nothing");
  if (config.overlap && config.progress == Progress::poll) throw std::invalid_argument("the cycle loop is a thread");
  impl_ = make_host_allreduce(comm, config, comm_);
  SB_MPI_CHECK(MPI_Comm_size(comm_, &ranks_));
  // From the implementation, as GradientExchange's buffers are (the shm transport's ranks read each
  // other's), and collective: allocated once here, never inside a step.
  fused_ = static_cast<float*>(impl_->allocate(std::max<size_t>(plan_.total_count, 1) * sizeof(float)));
  if (overlap_) thread_ = std::thread([this] { run_loop(); });
}

CycleExchange::~CycleExchange() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (fused_) impl_->release(fused_);
  impl_.reset();
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void CycleExchange::begin_step() {
  std::lock_guard lock(mutex_);
  plan_.buckets.clear();
  plan_.buckets_of_tensor.assign(plan_.tensors.size(), {});
  spans_.clear();
  handed_over_.clear();
  was_handed_.assign(plan_.tensors.size(), 0);
  step_done_ = false;
  communication_s_ = 0;
  negotiation_s_ = 0;
  cycles_ = 0;
  step_start_ = std::chrono::steady_clock::now();
  ++steps_begun_;
  changed_.notify_all();
}

void CycleExchange::tensor_ready(size_t tensor) {
  std::lock_guard lock(mutex_);
  SB_CHECK(tensor < was_handed_.size(), "a tensor the exchange does not hold (or no step begun)");
  SB_CHECK(!was_handed_[tensor], "a tensor reported ready twice in one step");
  was_handed_[tensor] = 1;
  handed_over_.push_back(tensor);  // the loop looks at its next cycle: nothing to wake
}

void CycleExchange::reduce_from(size_t first) {
  const float scale = 1.0f / static_cast<float>(ranks_);
  for (size_t b = first; b < plan_.buckets.size(); ++b) {
    const NvtxRange range("bucket", static_cast<int64_t>(b));
    const Bucket& bucket = plan_.buckets[b];
    const double start = MPI_Wtime();
    pack_bucket(bucket, gradients_, fused_, weight_);
    impl_->run(fused_, fused_, bucket.count, DataType::float32, RedOp::sum);
    unpack_bucket(bucket, gradients_, fused_, scale);
    const double end = MPI_Wtime();
    std::lock_guard lock(mutex_);
    spans_.emplace_back(start, end);
    communication_s_ += end - start;
  }
}

void CycleExchange::run_loop() {
  uint64_t steps_served = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);  // the next step begun
      changed_.wait(lock, [&] { return stopping_ || steps_begun_ > steps_served; });
      if (stopping_) return;
      steps_served = steps_begun_;
    }
    if (!run_step_cycles()) return;
    {
      std::lock_guard lock(mutex_);
      step_done_ = true;
    }
    changed_.notify_all();
  }
}

// Every rank runs as many cycles in a step, with the same collectives in the same order: a cycle's
// buckets follow from its negotiation's result, the same everywhere, and the step ends with the
// cycle whose result holds every tensor.
bool CycleExchange::run_step_cycles() {
  const size_t tensors = plan_.tensors.size();
  ReadyNegotiation negotiation(negotiation_words(plan_));
  std::vector<uint8_t> reduced(tensors, 0);
  size_t left = tensors;
  std::vector<size_t> handed_over, newly;
  std::chrono::steady_clock::time_point cycle_start;
  {
    std::lock_guard lock(mutex_);
    cycle_start = step_start_;
  }
  const auto cycle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(plan_.cycle_s));
  for (size_t tick = 0; left > 0; ++tick) {
    {
      std::unique_lock lock(mutex_);
      if (changed_.wait_until(lock, cycle_start, [&] { return stopping_; })) return false;
      handed_over = handed_over_;
    }
    // Horovod's loop sleeps what is left of a cycle after its work: the next cycle starts a cycle
    // time after this one, or at once if this one runs longer.
    cycle_start = std::max(cycle_start, std::chrono::steady_clock::now()) + cycle;
    negotiation.clear();
    for (size_t k : handed_over) negotiation.mark(k);
    const double seconds = negotiation.agree(comm_, ranks_);
    {
      std::lock_guard lock(mutex_);
      communication_s_ += seconds;  // the negotiation is communication too
      negotiation_s_ += seconds;
      cycles_ = tick + 1;
    }
    newly.clear();
    for (size_t k : handed_over)
      if (negotiation.everywhere(k) && !reduced[k]) newly.push_back(k), reduced[k] = 1;
    left -= newly.size();
    if (newly.empty()) continue;
    const size_t first = plan_.buckets.size();
    fuse_cycle(plan_, newly, tick, threshold_mb_);
    reduce_from(first);
  }
  return true;
}

ExchangeTimes CycleExchange::finish() {
  const double start = MPI_Wtime();
  if (!overlap_) {
    SB_CHECK(handed_over_.size() == plan_.tensors.size(), "finish() before every gradient was reported ready");
    fuse_cycle(plan_, handed_over_, 0, threshold_mb_);  // one cycle takes them all, in backward's order
    cycles_ = 1;
    reduce_from(0);
  } else {
    std::unique_lock lock(mutex_);
    SB_CHECK(handed_over_.size() == plan_.tensors.size(), "finish() before every gradient was reported ready");
    changed_.wait(lock, [&] { return step_done_; });
  }
  ExchangeTimes times;
  times.wait_s = MPI_Wtime() - start;
  std::lock_guard lock(mutex_);
  times.communication_s = communication_s_;
  times.negotiation_s = negotiation_s_;
  times.negotiations = overlap_ ? cycles_ : 0;  // without overlap there is no negotiation
  return times;
}

}  // namespace sb
