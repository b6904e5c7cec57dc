#pragma once
// Averages a model's gradients over the ranks, bucket by bucket (bucket_plan.hpp), on a
// communication thread that starts each bucket's allreduce the moment backward has produced its
// last gradient, while backward goes on. Each bucket is packed into a fused buffer, reduced in
// place by any allreduce implementation (MPI_Allreduce, or a schedule on the mpi or shm
// transport), and unpacked scaled by 1/ranks. Without overlap the same buckets are reduced in the
// same way after backward, so both paths give bit-identical gradients.
//
// The cycle strategy has no plan to follow: Horovod's loop fuses what each cycle finds ready, live
// (cycle_exchange.hpp). A cycle plan here is refused (std::invalid_argument).
//
// Progress: by default a communication thread drives each bucket's (blocking) allreduce. With
// Progress::poll there is no thread: a ready bucket's MPI_Iallreduce is posted by the caller's
// thread inside tensor_ready(), and the posted ones are tested there too, i.e. between layers, as
// a framework without a communication thread does; finish() waits for the rest. Which overlaps
// better depends on how far the MPI library progresses a posted collective between tests.
//
// Threading: the communication thread alone uses the exchange's communicator (a duplicate of the
// one given); the caller must not make MPI calls between begin_step() and finish(). MPI must be
// initialised with MPI_THREAD_SERIALIZED or more.
#include <mpi.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/buckets/bucket_plan.hpp"
#include "collectives/buckets/gradient_averager.hpp"
#include "collectives/compress/compressed_allreduce.hpp"

namespace sb {

enum class Progress { thread, poll };
// "thread" / "poll"; parse throws UsageError for anything else.
std::string progress_name(Progress progress);
Progress parse_progress(const std::string& name);

struct ExchangeConfig {
  std::string algorithm = "mpi";  // an allreduce implementation name (sb-allreduce --impl)
  ImplConfig impl;                // its transport, segment, node size
  bool overlap = true;
  Progress progress = Progress::thread;  // poll: MPI_Iallreduce tested between layers (--algo mpi only)
  // Gradient compression per bucket (collectives/compress/): "none" reduces the fp32 buckets with
  // `algorithm`; any other compressor sends its payload over MPI's allreduce or allgather, with
  // error feedback per bucket when asked.
  std::string compressor = "none";
  CompressorParams compressor_params;
  bool error_feedback = true;
};

// How both host exchanges start (this one and cycle_exchange.hpp): MPI must let a thread of
// theirs call it (MPI_THREAD_SERIALIZED or more); `own` becomes a duplicate of comm for that thread
// alone, on which the allreduce that config.algorithm names is made, for host buffers. UsageError
// for an unknown or device-only algorithm.
std::unique_ptr<AllreduceImpl> make_host_allreduce(MPI_Comm comm, const ExchangeConfig& config, MPI_Comm& own);

class GradientExchange final : public GradientAverager {
 public:
  // gradients[k] points at tensor k's fp32 gradient (plan's tensor order), count elements each.
  GradientExchange(MPI_Comm comm, const ExchangeConfig& config, BucketPlan plan, std::vector<float*> gradients);
  ~GradientExchange() override;
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  // Marks the start of a step's backward pass.
  void begin_step() override;
  // Tensor k's gradient is final for this step (called by backward, in any order).
  void tensor_ready(size_t tensor) override;
  // Waits until every bucket is reduced and unpacked (reducing them all now without overlap).
  ExchangeTimes finish() override;

  // This rank's gradients count `weight` times in the average (default 1): ranks whose gradients
  // are means over unequal shares of a global batch give weights share x ranks / batch, so that
  // the average is the mean over the whole batch. Set between steps.
  void set_weight(float weight) override { weight_ = weight; }

  const BucketPlan& plan() const override { return plan_; }
  std::vector<NamedFloats> carried_state() const override;
  void restore_carried_state(const std::vector<NamedFloats>& state) override;
  void set_step(uint64_t steps_done) override { step_ = steps_done; }
  // When each bucket's reduction started and ended in the last step (MPI_Wtime seconds), by bucket.
  const std::vector<double>& bucket_start() const { return bucket_start_; }
  const std::vector<double>& bucket_end() const { return bucket_end_; }
  std::vector<std::pair<double, double>> bucket_spans() const override;
  int ranks() const { return ranks_; }

 private:
  void run_thread();
  void reduce(size_t bucket);
  // The pieces of reduce(), for the polled path: pack into the fused buffer; unpack it averaged.
  void pack(size_t bucket);
  void unpack(size_t bucket, float scale);
  // Polled path: post the buckets that became ready; take in those that completed.
  void post(size_t bucket);
  void test_posted();
  void take_in(size_t bucket);  // a completed posted bucket: averaged back into the gradients
  // Polled path: posts the ready buckets, in the order they became ready.
  void post_ready();
  void count_negotiation(double seconds);  // the caller holds mutex_

  BucketPlan plan_;
  std::vector<float*> gradients_;
  bool overlap_;
  Progress progress_;
  float weight_ = 1.0f;
  std::vector<MPI_Request> requests_;  // per bucket, polled path; MPI_REQUEST_NULL when none
  std::vector<size_t> posted_;         // buckets posted and not yet complete, in posting order
  MPI_Comm comm_ = MPI_COMM_NULL;
  int ranks_ = 1;
  std::unique_ptr<AllreduceImpl> impl_;
  std::vector<std::unique_ptr<CompressedAllreduce>> compressed_;  // per bucket, when compressing
  uint64_t step_ = 0;
  std::vector<float*> fused_;  // one buffer per bucket, from impl_->allocate()

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<size_t> pieces_left_;  // per bucket, this step
  // Buckets ready and not yet taken (polled: not yet posted), in the order they became ready.
  std::vector<size_t> ready_;
  size_t done_ = 0;  // buckets reduced this step
  bool stopping_ = false;
  double communication_s_ = 0;
  double negotiation_s_ = 0;  // of communication_s_, with negotiations_ of them
  size_t negotiations_ = 0;
  std::vector<double> bucket_start_, bucket_end_;
  std::thread thread_;
};

}  // namespace sb
