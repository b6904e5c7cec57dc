#pragma once
// Horovod's tensor fusion as its background loop runs it, live, for training (sb-train
// --bucket-strategy cycle). A thread runs one cycle every --cycle-ms: it negotiates what is ready
// on every rank (an MPI_BAND allreduce of a bit per tensor, as Horovod's response cache does each
// cycle, idle or not), fuses the gradients newly ready everywhere first-fit under the threshold, in
// the order backward handed them over (fuse_cycle, as Horovod fuses its responses), and reduces
// those buckets one after the other through one fused buffer (Horovod's fusion buffer).
//
// The buckets are whatever the cycles find, so they change from step to step and from run to run;
// plan() holds the last step's. The ranks agree on them all the same: each cycle's fusion is made
// of the negotiation's result and of the order backward reports gradients in, which is the same on
// every rank. Where GradientExchange replays a cycle plan made from a profile on a fixed grid of
// ticks, here a cycle starts a cycle time after the last one started, or at once if that one ran
// longer, as Horovod's loop sleeps; the step's first cycle starts with begin_step().
//
// Without overlap, finish() fuses every gradient in one cycle (all are ready: no negotiation).
// No compressor (error feedback keeps a residual per bucket, and these buckets change from step to
// step) and no polled progress (the loop is a thread): the constructor throws std::invalid_argument.
//
// Threading as GradientExchange's: the thread alone uses the exchange's communicator (a duplicate),
// the caller makes no MPI call between begin_step() and finish(), MPI_THREAD_SERIALIZED or more.
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/buckets/bucket_plan.hpp"
#include "collectives/buckets/gradient_averager.hpp"
#include "collectives/buckets/gradient_exchange.hpp"
#include "collectives/buckets/ready_negotiation.hpp"

namespace sb {

class CycleExchange final : public GradientAverager {
 public:
  // gradients[k] points at tensors[k]'s fp32 gradient (forward order); cycle_s > 0; threshold_mb
  // is the fusion threshold (MiB of fp32; 0: no fusion).
  CycleExchange(MPI_Comm comm, const ExchangeConfig& config, const std::vector<GradientTensor>& tensors,
                double cycle_s, double threshold_mb, std::vector<float*> gradients);
  ~CycleExchange() override;
  CycleExchange(const CycleExchange&) = delete;
  CycleExchange& operator=(const CycleExchange&) = delete;

  void begin_step() override;
  void tensor_ready(size_t tensor) override;
  ExchangeTimes finish() override;
  void set_weight(float weight) override { weight_ = weight; }
  // The last step's buckets, each with the cycle that took it (empty before the first step).
  const BucketPlan& plan() const override { return plan_; }
  std::vector<std::pair<double, double>> bucket_spans() const override { return spans_; }
  void set_step(uint64_t /*steps_done*/) override {}  // nothing here depends on the step
  // The cycles the last step took, up to the one that found its last gradient: overlapped, each
  // with its negotiation; without overlap, the one finish() ran.
  size_t cycles() const { return cycles_; }

 private:
  void run_loop();
  // The cycles of one step; false when the exchange is being destroyed.
  bool run_step_cycles();
  // Reduces the buckets from `first` on (one cycle's) through the fused buffer, averaged back.
  void reduce_from(size_t first);

  BucketPlan plan_;  // this step's buckets so far
  double threshold_mb_ = 0;
  std::vector<float*> gradients_;
  bool overlap_ = true;
  float weight_ = 1.0f;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int ranks_ = 1;
  std::unique_ptr<AllreduceImpl> impl_;
  float* fused_ = nullptr;  // room for every gradient at once: no bucket is larger

  std::mutex mutex_;
  std::condition_variable changed_;
  std::chrono::steady_clock::time_point step_start_;
  uint64_t steps_begun_ = 0;
  std::vector<size_t> handed_over_;  // this step's tensors in the order backward reported them
  std::vector<uint8_t> was_handed_;  // per tensor: in handed_over_ (a second report is a bug)
  bool step_done_ = false;           // every gradient of this step is reduced
  bool stopping_ = false;
  double communication_s_ = 0;
  double negotiation_s_ = 0;  // of communication_s_
  size_t cycles_ = 0;         // cycles() 
  std::vector<std::pair<double, double>> spans_;  // per bucket of plan_
  std::thread thread_;
};

}  // namespace sb
