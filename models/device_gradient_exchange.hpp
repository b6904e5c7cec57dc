#pragma once
// Data-parallel gradient averaging on GPUs (CUDA builds only): the bucket plan of the host
// exchange, reduced by ncclAllReduce, or by one of the schedules on the nccl transport (--algo
// ring, rabenseifner, ...: collectives/transports/nccl_transport.hpp), on a communication stream
// of its own. Nothing waits on the
// host: when backward reports a bucket's last gradient, the communication stream waits for an
// event recorded on the compute stream at that point, packs the bucket's pieces into a fused
// buffer, reduces it, and unpacks it scaled by weight / ranks into the gradients; finish() makes
// the compute stream wait for all of that, so the optimizer step that follows sees the averages.
// Backward's kernels and the reductions thus overlap on the device (without overlap, every bucket
// is started in finish()). All of it is stream work, so a CUDA graph can record it with the
// backward pass (queue_rest, replayed); its timing events are then recorded as graph nodes.
//
// Buckets are of one element type: the model's compute type (fp32, or fp16/bf16 under those
// precisions, as AMP frameworks reduce half gradients), or fp16/bf16 by choice (--compressor
// fp16|bf16: Horovod's compression, half the bytes on the wire). Pieces of another type (the fp32
// batch-norm gradients under fp16) are converted on packing and back on unpacking. With error
// feedback, a bucket narrower than a piece keeps an fp32 residual per element: what rounding
// dropped is added to the next step's gradient before it is rounded again.
//
// Any other compressor (--compressor topk, powersgd, ...) gives each fp32 bucket a
// DeviceCompressedAllreduce of its own (its residual, PowerSGD's warm start), which leaves the
// average in the bucket, weighted before compression as on the host. qsgd, terngrad and threshold
// read a figure back to the host while compressing, so with them the host waits for the
// communication stream inside backward: correct, but with less overlap.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/buckets/gradient_averager.hpp"
#include "collectives/compress/compressor.hpp"
#include "models/gpu_kernels.hpp"

namespace sb::models {

struct DeviceExchangeState;  // NCCL communicator, stream, events, buffers

struct DeviceExchangeOptions {
  gpu::ElementType bucket_type = gpu::ElementType::f32;  // the fused buffers' type (fp32 with a compressor)
  bool overlap = true;
  const AllreduceAlgorithm* algorithm = nullptr;  // a schedule on the nccl transport; null: ncclAllReduce
  AlgorithmParams algorithm_params;               // its parameters (segment in elements of bucket_type)
  std::string compressor = "none";  // none, fp16 or bf16 (as bucket_type says), or a payload compressor
  CompressorParams params;          // its parameters; params.stream is set to the rank
  bool error_feedback = true;
};

class DeviceGradientExchange final : public GradientAverager {
 public:
  // gradients[k]: tensor k's gradient on the device (plan's tensor order). compute: the stream
  // backward runs on. Collective over comm (one GPU per rank, this process's current device).
  DeviceGradientExchange(MPI_Comm comm, BucketPlan plan, std::vector<gpu::Elements> gradients, gpu::Stream compute,
                         const DeviceExchangeOptions& options);
  ~DeviceGradientExchange() override;

  void begin_step() override;
  void tensor_ready(size_t tensor) override;
  // Queues what is left and returns the last step's times, read from CUDA events (this waits for
  // the communication stream): communication_s from the first bucket's start to the last one's
  // end, wait_s the part of it after backward's last kernel (not hidden).
  ExchangeTimes finish() override;
  // Uncompressed and fp16/bf16 buckets only: a payload compressor reads figures back to the host
  // and draws its randomness on it, which a recording cannot hold (sb-train refuses the pair).
  void queue_rest() override;
  void replayed() override;
  void set_weight(float weight) override { weight_ = weight; }
  const BucketPlan& plan() const override { return plan_; }
  std::vector<NamedFloats> carried_state() const override;
  void restore_carried_state(const std::vector<NamedFloats>& state) override;
  void set_step(uint64_t steps_done) override { step_ = steps_done; }

 private:
  void launch(size_t bucket);
  void reduce_compressed(size_t bucket);

  BucketPlan plan_;
  std::vector<gpu::Elements> gradients_;
  gpu::Stream compute_;
  gpu::ElementType bucket_type_;
  bool overlap_, error_feedback_;
  float weight_ = 1.0f;
  int ranks_ = 1;
  uint64_t step_ = 0;  // begin_step()s so far: the compressors' step, the same on every rank
  std::vector<size_t> pieces_left_;  // per bucket, this step
  std::vector<bool> launched_;
  size_t launched_count_ = 0;
  bool queued_ = false;  // queue_rest() has run this step, or a replay did its work
  std::unique_ptr<DeviceExchangeState> state_;
};

}  // namespace sb::models
