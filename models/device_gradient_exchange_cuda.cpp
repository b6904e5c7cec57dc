#include "models/device_gradient_exchange.hpp"

#include <algorithm>
#include <stdexcept>

#include "collectives/compress/device_compressed_allreduce.hpp"
#include "collectives/nccl_context.hpp"
#include "collectives/schedule_allreduce.hpp"
#include "collectives/transports/nccl_transport.hpp"
#include "common/check.hpp"
#include "common/nvtx.hpp"
#include "kernels/device_compress.hpp"

namespace sb::models {

struct DeviceExchangeState {
  explicit DeviceExchangeState(MPI_Comm comm) : nccl(comm) {}
  NcclContext nccl;  // the communicator and the communication stream
  std::vector<void*> fused;          // one buffer per bucket
  std::vector<float*> residual;      // per bucket, with error feedback into a narrower type; else null
  std::vector<std::unique_ptr<DeviceCompressedAllreduce>> compressed;  // per bucket, with a payload compressor
  std::unique_ptr<NcclTransport> transport;  // with a schedule (--algo ring, ...)
  std::vector<ScheduleCache> schedules;      // per bucket: its schedule, built on first use
  std::vector<cudaEvent_t> ready;    // per bucket: backward has produced its last gradient
  // Timing, recorded as graph nodes when a step is captured (cudaEventRecordExternal), so that a
  // replay records them too; `joined` only orders the compute stream after the communication.
  cudaEvent_t first_start = nullptr, backward_end = nullptr, comm_end = nullptr, joined = nullptr;
};

namespace {
gpu::Elements at(const gpu::Elements& e, size_t elements) {
  return {static_cast<char*>(e.data) + elements * gpu::element_size(e.type), e.type};
}
// An event for timing: recorded by the stream, or, while the stream is captured, by every replay
// of the recording (the external flag is an error outside a capture).
void record_timing(cudaEvent_t event, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  SB_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  SB_CUDA_CHECK(cudaEventRecordWithFlags(
      event, stream, capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault));
}

DataType data_type(gpu::ElementType type) {
  switch (type) {
    case gpu::ElementType::f16: return DataType::float16;
    case gpu::ElementType::bf16: return DataType::bfloat16;
    default: return DataType::float32;
  }
}
}  // namespace

DeviceGradientExchange::DeviceGradientExchange(MPI_Comm comm, BucketPlan plan, std::vector<gpu::Elements> gradients,
                                               gpu::Stream compute, const DeviceExchangeOptions& options)
    : plan_(std::move(plan)),
      gradients_(std::move(gradients)),
      compute_(compute),
      bucket_type_(options.bucket_type),
      overlap_(options.overlap),
      error_feedback_(options.error_feedback),
      pieces_left_(plan_.buckets.size()),
      launched_(plan_.buckets.size()),
      state_(std::make_unique<DeviceExchangeState>(comm)) {
  SB_MPI_CHECK(MPI_Comm_size(comm, &ranks_));
  SB_CHECK(gradients_.size() == plan_.buckets_of_tensor.size(), "one gradient per planned tensor");
  if (options.algorithm) {
    state_->transport = std::make_unique<NcclTransport>(state_->nccl);
    for (size_t b = 0; b < plan_.buckets.size(); ++b)
      state_->schedules.emplace_back(*options.algorithm, options.algorithm_params, comm);
  }
  const bool payload_compressor = options.compressor != "none" && options.compressor != "fp16" && options.compressor != "bf16";
  if (payload_compressor) {
    SB_CHECK(bucket_type_ == gpu::ElementType::f32, "compressors take fp32 buckets");
    int rank = 0;
    SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    CompressorParams params = options.params;
    params.stream = static_cast<uint64_t>(rank);
    for (size_t b = 0; b < plan_.buckets.size(); ++b) {
      params.tensors = bucket_tensor_views(plan_, b);
      state_->compressed.push_back(
          std::make_unique<DeviceCompressedAllreduce>(options.compressor, params, error_feedback_, state_->nccl));
    }
  }
  for (const Bucket& b : plan_.buckets) {
    state_->fused.push_back(state_->nccl.allocate(b.count * gpu::element_size(bucket_type_)));
    bool narrowing = false;
    for (const BucketPiece& p : b.pieces)
      narrowing = narrowing || gpu::element_size(gradients_[p.tensor].type) > gpu::element_size(bucket_type_);
    float* residual = nullptr;
    if (error_feedback_ && narrowing && !payload_compressor) {
      residual = static_cast<float*>(state_->nccl.allocate(b.count * sizeof(float)));
      SB_CUDA_CHECK(cudaMemsetAsync(residual, 0, b.count * sizeof(float), state_->nccl.stream()));
    }
    state_->residual.push_back(residual);
    cudaEvent_t event = nullptr;
    SB_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    state_->ready.push_back(event);
  }
  SB_CUDA_CHECK(cudaEventCreate(&state_->first_start));
  SB_CUDA_CHECK(cudaEventCreate(&state_->backward_end));
  SB_CUDA_CHECK(cudaEventCreate(&state_->comm_end));
  SB_CUDA_CHECK(cudaEventCreateWithFlags(&state_->joined, cudaEventDisableTiming));
}

DeviceGradientExchange::~DeviceGradientExchange() {
  cudaStreamSynchronize(state_->nccl.stream());
  for (void* buffer : state_->fused) state_->nccl.release(buffer);
  for (float* buffer : state_->residual)
    if (buffer) state_->nccl.release(buffer);
  for (cudaEvent_t event : state_->ready) cudaEventDestroy(event);
  cudaEventDestroy(state_->first_start);
  cudaEventDestroy(state_->backward_end);
  cudaEventDestroy(state_->comm_end);
  cudaEventDestroy(state_->joined);
}

void DeviceGradientExchange::begin_step() {
  ++step_;
  for (size_t b = 0; b < plan_.buckets.size(); ++b) {
    pieces_left_[b] = plan_.buckets[b].pieces.size();
    launched_[b] = false;
  }
  launched_count_ = 0;
  queued_ = false;
}

void DeviceGradientExchange::tensor_ready(size_t tensor) {
  for (size_t b : plan_.buckets_of_tensor[tensor]) {
    for (const BucketPiece& piece : plan_.buckets[b].pieces)
      if (piece.tensor == tensor) --pieces_left_[b];
    if (overlap_ && pieces_left_[b] == 0) launch(b);
  }
}

// Queued on the communication stream after backward's kernels so far: pack, reduce, unpack.
void DeviceGradientExchange::launch(size_t b) {
  if (launched_[b]) return;
  launched_[b] = true;
  const NvtxRange range("bucket", static_cast<int64_t>(b));
  const cudaStream_t comm = state_->nccl.stream();
  SB_CUDA_CHECK(cudaEventRecord(state_->ready[b], compute_));
  SB_CUDA_CHECK(cudaStreamWaitEvent(comm, state_->ready[b], 0));
  if (launched_count_++ == 0) record_timing(state_->first_start, comm);
  if (!state_->compressed.empty()) return reduce_compressed(b);
  const Bucket& bucket = plan_.buckets[b];
  const gpu::Elements fused{state_->fused[b], bucket_type_};
  float* residual = state_->residual[b];
  for (const BucketPiece& p : bucket.pieces) {
    if (residual)
      gpu::convert_with_feedback(at(gradients_[p.tensor], p.offset), residual + p.bucket_offset,
                                 at(fused, p.bucket_offset), p.count, comm);
    else
      gpu::convert(at(gradients_[p.tensor], p.offset), at(fused, p.bucket_offset), p.count, comm);
  }
  if (state_->transport)  // the schedule's rounds and reduction kernels, queued on the same stream
    state_->transport->enqueue(state_->schedules[b].for_count(bucket.count), fused.data, fused.data,
                               data_type(bucket_type_), RedOp::sum);
  else
    SB_NCCL_CHECK(ncclAllReduce(fused.data, fused.data, bucket.count, nccl_datatype(data_type(bucket_type_)), ncclSum,
                                state_->nccl.comm(), comm));
  const float scale = weight_ / static_cast<float>(ranks_);
  for (const BucketPiece& p : bucket.pieces)
    gpu::axpby(scale, at(fused, p.bucket_offset), 0.0f, at(gradients_[p.tensor], p.offset), p.count, comm);
}

// The compressed path: packed as fp32 and weighted (compression is not linear: the weight goes in
// first, as on the host), averaged by the bucket's compressed allreduce, unpacked as it is.
void DeviceGradientExchange::reduce_compressed(size_t b) {
  const cudaStream_t comm = state_->nccl.stream();
  const Bucket& bucket = plan_.buckets[b];
  float* fused = static_cast<float*>(state_->fused[b]);
  const gpu::Elements packed{fused, gpu::ElementType::f32};
  for (const BucketPiece& p : bucket.pieces)
    gpu::convert(at(gradients_[p.tensor], p.offset), at(packed, p.bucket_offset), p.count, comm);
  if (weight_ != 1.0f) scale_cuda(fused, bucket.count, weight_, comm);
  state_->compressed[b]->run(fused, bucket.count, step_);
  for (const BucketPiece& p : bucket.pieces)
    gpu::convert(at(packed, p.bucket_offset), at(gradients_[p.tensor], p.offset), p.count, comm);
}

void DeviceGradientExchange::queue_rest() {
  const cudaStream_t comm = state_->nccl.stream();
  record_timing(state_->backward_end, compute_);
  // Every rank launches the buckets in the same order: the plan's, here.
  for (size_t b = 0; b < plan_.buckets.size(); ++b) launch(b);
  record_timing(state_->comm_end, comm);
  SB_CUDA_CHECK(cudaEventRecord(state_->joined, comm));
  SB_CUDA_CHECK(cudaStreamWaitEvent(compute_, state_->joined, 0));
  queued_ = true;
}

void DeviceGradientExchange::replayed() {
  SB_CHECK(state_->compressed.empty(), "a compressed exchange cannot be replayed");
  std::fill(launched_.begin(), launched_.end(), true);
  launched_count_ = launched_.size();
  queued_ = true;
}

ExchangeTimes DeviceGradientExchange::finish() {
  if (!queued_) queue_rest();
  queued_ = false;
  SB_CUDA_CHECK(cudaEventSynchronize(state_->comm_end));
  float total_ms = 0, exposed_ms = 0;
  SB_CUDA_CHECK(cudaEventElapsedTime(&total_ms, state_->first_start, state_->comm_end));
  SB_CUDA_CHECK(cudaEventElapsedTime(&exposed_ms, state_->backward_end, state_->comm_end));
  return {total_ms * 1e-3, std::max(0.0f, exposed_ms) * 1e-3};
}

// The narrowing residuals (fp16/bf16 buckets) or the compressed allreduces' residuals and warm
// starts, copied to the host once the communication stream is idle.
std::vector<NamedFloats> DeviceGradientExchange::carried_state() const {
  SB_CUDA_CHECK(cudaStreamSynchronize(state_->nccl.stream()));
  std::vector<NamedFloats> state;
  for (size_t b = 0; b < plan_.buckets.size(); ++b) {
    if (float* residual = state_->residual[b]) {
      std::vector<float> host(plan_.buckets[b].count);
      state_->nccl.download(host.data(), residual, host.size() * sizeof(float));
      state.emplace_back(carried_name(b, "residual"), std::move(host));
    }
    if (state_->compressed.empty()) continue;
    DeviceCompressedAllreduce& compressed = *state_->compressed[b];
    if (std::vector<float> residual = compressed.residual(); compressed.error_feedback() && !residual.empty())
      state.emplace_back(carried_name(b, "residual"), std::move(residual));
    if (std::vector<float> own = compressed.compressor().carried(); !own.empty())
      state.emplace_back(carried_name(b, "warm_start"), std::move(own));
  }
  return state;
}

void DeviceGradientExchange::restore_carried_state(const std::vector<NamedFloats>& state) {
  SB_CUDA_CHECK(cudaStreamSynchronize(state_->nccl.stream()));
  for (const auto& [name, values] : state) {
    size_t b = 0;
    for (; b < plan_.buckets.size(); ++b) {
      const bool residual = name == carried_name(b, "residual"), warm = name == carried_name(b, "warm_start");
      if (!residual && !warm) continue;
      if (residual && values.size() != plan_.buckets[b].count)
        throw std::invalid_argument(name + " holds " + std::to_string(values.size()) + " values, not the bucket's " +
                                    std::to_string(plan_.buckets[b].count));
      if (residual && state_->residual[b])
        state_->nccl.upload(state_->residual[b], values.data(), values.size() * sizeof(float));
      else if (residual && !state_->compressed.empty())
        state_->compressed[b]->restore_residual(values);
      else if (warm && !state_->compressed.empty())
        state_->compressed[b]->compressor().restore_carried(values);
      else
        throw std::invalid_argument(name + ": this exchange keeps no such state");
      break;
    }
    if (b == plan_.buckets.size()) throw std::invalid_argument(name + " belongs to no bucket of this exchange");
  }
}

}  // namespace sb::models
